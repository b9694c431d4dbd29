"""The Google preset: OpenID discovery at accounts.google.com, an authorization request asking for
offline access with the consent prompt (Google returns a refresh token only then), the ID token's
legacy issuer ``accounts.google.com`` accepted, and the refresh token kept for ``upstream_token``.
Google itself is not reachable from the tests: its endpoints are answered as Google documents them
(httpx MockTransport), the ID token signed with a key its JWKS serves."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from mcpcore import McpApp, Settings
from mcpcore.auth.proxy import OAuthProxy, Upstream, upstream_tokens
from tests.apps.proxied import whoami
from tests.auth.upstream import SIGNING_KEY, Browser, pkce

pytestmark = pytest.mark.anyio
REDIRECT = "http://127.0.0.1:9/callback"
CLIENT_ID = "1234-abc.apps.googleusercontent.com"
SUB = "110169484474386276334"
DISCOVERY = {
    "issuer": "https://accounts.google.com",
    "authorization_endpoint": "https://accounts.google.com/o/oauth2/v2/auth",
    "token_endpoint": "https://oauth2.googleapis.com/token",
    "userinfo_endpoint": "https://openidconnect.googleapis.com/v1/userinfo",
    "jwks_uri": "https://www.googleapis.com/oauth2/v3/certs",
    "response_types_supported": ["code", "token", "id_token"],
    "id_token_signing_alg_values_supported": ["RS256"],
    "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
}


class FakeGoogle:
    """Google's discovery, token and key endpoints; ``nonce`` is what the next ID token carries."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.nonce = ""
        self.token_requests: list[dict[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        if url == "https://accounts.google.com/.well-known/openid-configuration":
            return httpx.Response(200, json=DISCOVERY)
        if url == DISCOVERY["jwks_uri"]:
            jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
            return httpx.Response(200, json={"keys": [{**jwk, "kid": "g1", "alg": "RS256", "use": "sig"}]})
        if url == DISCOVERY["userinfo_endpoint"]:  # asked for the tenant claim, which Google has not
            assert request.headers["authorization"] == "Bearer ya29.first"
            return httpx.Response(200, json={"sub": SUB, "email": "ada@example.com", "name": "Ada Lovelace"})
        if url == DISCOVERY["token_endpoint"]:
            form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
            self.token_requests.append(form)
            if form["grant_type"] == "refresh_token":  # Google sends no new refresh token
                return httpx.Response(200, json={"access_token": "ya29.second", "expires_in": 3599,
                                                 "token_type": "Bearer", "scope": "openid email profile"})
            now = int(time.time())
            claims = {"iss": "accounts.google.com", "aud": CLIENT_ID, "azp": CLIENT_ID, "sub": SUB,
                      "email": "ada@example.com", "name": "Ada Lovelace", "iat": now, "exp": now + 3600,
                      "nonce": self.nonce}
            id_token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "g1"})
            return httpx.Response(200, json={"access_token": "ya29.first", "expires_in": 1, "token_type": "Bearer",
                                             "refresh_token": "1//google-refresh", "id_token": id_token,
                                             "scope": "openid email profile"})
        return httpx.Response(404)


async def test_the_google_preset_asks_for_offline_access_and_keeps_the_refresh_token() -> None:
    google = FakeGoogle()
    base = "http://127.0.0.1:8124"
    settings = Settings.from_env({"MCP_PUBLIC_URL": base, "MCP_AUTH_SIGNING_KEY": SIGNING_KEY,
                                  "OAUTH_UPSTREAM_PRESET": "google", "OAUTH_UPSTREAM_CLIENT_ID": CLIENT_ID,
                                  "OAUTH_UPSTREAM_CLIENT_SECRET": "google-secret"})
    proxy = OAuthProxy.from_settings(settings, transport=httpx.MockTransport(google))
    app = McpApp("calendar", tools=[whoami], auth=proxy, settings=settings)
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=base) as http:
            client_id = (await http.post("/oauth/register", json={"redirect_uris": [REDIRECT]})).json()["client_id"]
            verifier, challenge = pkce()
            r = await http.get("/oauth/authorize", params={
                "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "code_challenge": challenge,
                "code_challenge_method": "S256", "state": "s1"})
            assert r.status_code == 302, r.text
            upstream_url = r.headers["location"]
            assert upstream_url.startswith("https://accounts.google.com/o/oauth2/v2/auth?")
            q = {k: v[0] for k, v in parse_qs(urlsplit(upstream_url).query).items()}
            assert q["access_type"] == "offline" and q["prompt"] == "consent"
            assert q["client_id"] == CLIENT_ID and q["redirect_uri"] == f"{base}/oauth/callback"
            assert q["scope"] == "openid email profile" and q["response_type"] == "code"
            assert q["code_challenge_method"] == "S256" and q["nonce"]
            google.nonce = q["nonce"]
            page = await http.get("/oauth/callback", params={"code": "4/google-code", "state": q["state"]})
            assert page.status_code == 200 and "Signed in as <strong>Ada Lovelace</strong>" in page.text, page.text
            action, fields = Browser.form(page.text)
            r = await http.post(urlsplit(action).path, data={**fields, "decision": "allow"})
            code = parse_qs(urlsplit(r.headers["location"]).query)["code"][0]
            r = await http.post("/oauth/token", data={"grant_type": "authorization_code", "code": code,
                                                      "client_id": client_id, "redirect_uri": REDIRECT,
                                                      "code_verifier": verifier})
            assert r.status_code == 200, r.text
            info = await proxy.authenticate(f"Bearer {r.json()['access_token']}")
            assert info.subject == SUB and info.tenant_id is None
            # Google's access token is (nearly) expired: the refresh token it gave renews it.
            tokens = await upstream_tokens(info)
            assert tokens["access_token"] == "ya29.second" and tokens["refresh_token"] == "1//google-refresh"
    finally:
        await app.shutdown()
    assert [f["grant_type"] for f in google.token_requests] == ["authorization_code", "refresh_token"]
    assert google.token_requests[1]["refresh_token"] == "1//google-refresh"


async def test_only_the_google_preset_adds_offline_access() -> None:
    def discovery(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={**DISCOVERY, "issuer": str(request.url).split("/.well-known")[0]})

    async def query(preset: str, issuer: str | None) -> dict[str, str]:
        up = Upstream(preset=preset, issuer_url=issuer, client_id="c", client_secret="s",
                      transport=httpx.MockTransport(discovery))
        try:
            url = await up.authorize_url("https://tools.example.com/oauth/callback", "st", "x" * 43, "n1")
        finally:
            await up.close()
        return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}

    plain: dict[str, Any] = await query("oidc", "https://login.example.com")
    assert "access_type" not in plain and "prompt" not in plain and plain["scope"] == "openid"
    google = await query("google", None)
    assert google["access_type"] == "offline" and google["prompt"] == "consent" and google["nonce"] == "n1"
    scoped = Upstream(preset="google", issuer_url=None, client_id="c", client_secret="s",
                      scopes=("https://www.googleapis.com/auth/calendar.readonly",))
    assert scoped.issuer == "https://accounts.google.com"
    assert scoped.scopes == ("openid", "https://www.googleapis.com/auth/calendar.readonly")
    await scoped.close()
