"""The GitHub preset (OAuth 2.0, not OpenID): its endpoints for github.com and for GitHub
Enterprise Server, and a whole flow through the authorization server with GitHub's token and
user API answered as GitHub documents them (httpx MockTransport: GitHub itself is not reachable
from the tests)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from mcpcore import McpApp, Settings
from mcpcore.auth.proxy import OAuthProxy, Upstream
from tests.apps.proxied import whoami
from tests.auth.upstream import SIGNING_KEY, pkce

pytestmark = pytest.mark.anyio
REDIRECT = "http://127.0.0.1:9/callback"


def test_endpoints_for_github_and_enterprise() -> None:
    hub = Upstream(preset="github", issuer_url=None, client_id="Iv1.abc", client_secret="s")
    assert hub.meta["authorization_endpoint"] == "https://github.com/login/oauth/authorize"
    assert hub.meta["token_endpoint"] == "https://github.com/login/oauth/access_token"
    assert hub.meta["userinfo_endpoint"] == "https://api.github.com/user"
    assert hub.scopes == ("read:user",)
    ghe = Upstream(preset="github", issuer_url="https://git.example.com", client_id="x", client_secret="s")
    assert ghe.meta["userinfo_endpoint"] == "https://git.example.com/api/v3/user"


async def test_a_flow_with_the_github_preset() -> None:
    seen: list[dict[str, Any]] = []

    def github(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/login/oauth/access_token":
            form = parse_qs(request.content.decode())
            seen.append({k: v[0] for k, v in form.items()})
            assert request.headers["accept"] == "application/json"
            return httpx.Response(200, json={"access_token": "gho_user_token", "token_type": "bearer",
                                             "scope": "read:user"})
        if request.url.path == "/user":
            assert request.headers["authorization"] == "Bearer gho_user_token"
            return httpx.Response(200, json={"id": 583231, "login": "octocat"})
        return httpx.Response(404)

    base = "http://127.0.0.1:8123"
    settings = Settings.from_env({"MCP_PUBLIC_URL": base, "MCP_AUTH_SIGNING_KEY": SIGNING_KEY,
                                  "OAUTH_UPSTREAM_PRESET": "github", "OAUTH_UPSTREAM_CLIENT_ID": "Iv1.abc",
                                  "OAUTH_UPSTREAM_CLIENT_SECRET": "hub-secret"})
    proxy = OAuthProxy.from_settings(settings, transport=httpx.MockTransport(github))
    app = McpApp("hub", tools=[whoami], auth=proxy, settings=settings)
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=base) as http:
            client_id = (await http.post("/oauth/register", json={"redirect_uris": [REDIRECT]})).json()["client_id"]
            verifier, challenge = pkce()
            r = await http.get("/oauth/authorize", params={
                "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "code_challenge": challenge,
                "code_challenge_method": "S256", "state": "s1"})
            upstream_url = r.headers["location"]
            assert upstream_url.startswith("https://github.com/login/oauth/authorize?")
            q = {k: v[0] for k, v in parse_qs(urlsplit(upstream_url).query).items()}
            assert q["client_id"] == "Iv1.abc" and q["redirect_uri"] == f"{base}/oauth/callback"
            assert q["scope"] == "read:user" and "nonce" not in q
            page = await http.get("/oauth/callback", params={"code": "hub-code", "state": q["state"]})
            assert page.status_code == 200 and "Signed in as <strong>octocat</strong>" in page.text
            from tests.auth.upstream import Browser

            action, fields = Browser.form(page.text)
            r = await http.post(urlsplit(action).path, data={**fields, "decision": "allow"})
            code = parse_qs(urlsplit(r.headers["location"]).query)["code"][0]
            r = await http.post("/oauth/token", data={"grant_type": "authorization_code", "code": code,
                                                      "client_id": client_id, "redirect_uri": REDIRECT,
                                                      "code_verifier": verifier})
            info = await proxy.authenticate(f"Bearer {r.json()['access_token']}")
            assert info.subject == "583231" and info.client_id == client_id and info.tenant_id is None
    finally:
        await app.shutdown()
    assert seen == [{"grant_type": "authorization_code", "code": "hub-code", "redirect_uri": f"{base}/oauth/callback",
                     "code_verifier": seen[0]["code_verifier"], "client_id": "Iv1.abc",
                     "client_secret": "hub-secret"}]
