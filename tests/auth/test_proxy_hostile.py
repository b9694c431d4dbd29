"""The authorization server against hostile requests, in process (so the store can be looked
at: each refusal must leave nothing behind), with the real oidc-provider upstream and real HTTPS
client metadata documents on loopback. Each test fails without the defence it names."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from mcpcore import McpApp, Settings
from mcpcore.auth.proxy import OAuthProxy
from mcpcore.auth.proxy.store import MemoryProxyStore
from tests.apps.proxied import whoami
from tests.auth.docserver import DocServer
from tests.auth.upstream import SIGNING_KEY, Browser, UpstreamProvider, authorize_url, pkce, proxy_env
from tests.servers import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
REDIRECT = "http://127.0.0.1:9/callback"


class Rig:
    def __init__(self, app: McpApp, proxy: OAuthProxy, http: httpx.AsyncClient, base: str) -> None:
        self.app, self.proxy, self.http, self.base = app, proxy, http, base

    @property
    def store(self) -> MemoryProxyStore:
        store = self.proxy.store
        assert isinstance(store, MemoryProxyStore)
        return store

    def stored(self) -> dict[str, int]:
        return {k: self.store.count(k) for k in ("txn", "code", "pending", "client", "family", "refresh", "consent")
                if self.store.count(k)}

    async def register(self, **extra: Any) -> str:
        r = await self.http.post("/oauth/register", json={"redirect_uris": [REDIRECT], "client_name": "Desk", **extra})
        assert r.status_code == 201, r.text
        return str(r.json()["client_id"])


async def _rig(upstream: UpstreamProvider, docs: DocServer | None, **settings: str) -> AsyncIterator[Rig]:
    import ssl

    base = f"http://127.0.0.1:{free_port()}"
    env = proxy_env(upstream, base, **settings)
    s = Settings.from_env(env)
    proxy = OAuthProxy.from_settings(s)
    if docs is not None:  # trust the test CA for client metadata documents
        from mcpcore.auth.proxy.clients import CimdResolver
        from mcpcore.auth.proxy.fetch import SafeFetcher

        proxy.fetcher = SafeFetcher(allow_private=s.oauth_proxy_cimd_allow_private, timeout=1.0,
                                    verify=ssl.create_default_context(cafile=str(docs.ca)))
        proxy.core.cimd = CimdResolver(proxy.fetcher)
    app = McpApp("hostile", tools=[whoami], auth=proxy, settings=s.replace(auth_mode="none"))
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=base) as http:
            yield Rig(app, proxy, http, base)
    finally:
        await app.shutdown()


@pytest.fixture
async def rig(upstream: UpstreamProvider) -> AsyncIterator[Rig]:
    async for r in _rig(upstream, None):
        yield r


@pytest.fixture
async def cimd_rig(upstream: UpstreamProvider, docs: DocServer) -> AsyncIterator[Rig]:
    async for r in _rig(upstream, docs, OAUTH_PROXY_CIMD_ALLOW_PRIVATE="true"):
        yield r


@pytest.fixture
async def strict_rig(upstream: UpstreamProvider, docs: DocServer) -> AsyncIterator[Rig]:
    async for r in _rig(upstream, docs):
        yield r


def _no_redirect(r: httpx.Response) -> None:
    assert r.status_code == 400 and "location" not in r.headers, (r.status_code, r.headers)
    assert r.headers["content-type"].startswith("text/html") and "Traceback" not in r.text


async def test_open_redirect_and_unregistered_redirect_uris_get_a_page(rig: Rig) -> None:
    client_id = await rig.register()
    _, challenge = pkce()
    for uri in ("https://evil.example/cb", "http://127.0.0.1:9/callback/../steal", "http://127.0.0.1:9/other"):
        r = await rig.http.get(authorize_url(rig.base, client_id, uri, challenge))
        _no_redirect(r)
        assert "not one it registered" in r.text
    r = await rig.http.get(authorize_url(rig.base, "never-registered", REDIRECT, challenge))
    _no_redirect(r)
    assert rig.stored() == {"client": 1}
    # a loopback redirect URI may change its port (RFC 8252), nothing else
    r = await rig.http.get(authorize_url(rig.base, client_id, "http://127.0.0.1:50123/callback", challenge))
    assert r.status_code == 302 and r.headers["location"].startswith(rig.proxy.core.upstream.issuer)


async def test_pkce_downgrade_is_refused_at_the_client_with_nothing_stored(rig: Rig) -> None:
    client_id = await rig.register()
    verifier, challenge = pkce()
    cases = [{"code_challenge_method": "plain", "code_challenge": verifier[:43]},
             {"code_challenge_method": None, "code_challenge": challenge},
             {"code_challenge_method": None, "code_challenge": None}]
    for case in cases:
        url = authorize_url(rig.base, client_id, REDIRECT, challenge)
        url = str(httpx.URL(url).copy_remove_param("code_challenge_method").copy_remove_param("code_challenge"))
        url = str(httpx.URL(url).copy_merge_params({k: v for k, v in case.items() if v is not None}))
        r = await rig.http.get(url)
        assert r.status_code == 302
        q = parse_qs(urlsplit(r.headers["location"]).query)
        assert r.headers["location"].startswith(REDIRECT) and q["error"] == ["invalid_request"], q
        assert q["state"] == ["client-state-1"] and q["iss"] == [rig.base]
    assert rig.stored() == {"client": 1}


async def test_thousands_of_registrations_are_bounded(upstream: UpstreamProvider) -> None:
    async for rig in _rig(upstream, None, OAUTH_PROXY_REGISTRATIONS_PER_MINUTE="10"):
        codes: dict[int, int] = {}
        for _ in range(3_000):
            r = await rig.http.post("/oauth/register", json={"redirect_uris": [REDIRECT]})
            codes[r.status_code] = codes.get(r.status_code, 0) + 1
        # the count is per clock minute: a run that straddles a minute may get two minutes' worth
        assert codes[201] in (10, 20) and codes[429] == 3_000 - codes[201], codes
        assert rig.store.count("client") == codes[201]
        r = await rig.http.post("/oauth/register", json={"redirect_uris": [REDIRECT]})
        assert r.json()["error"] == "slow_down" and r.headers["retry-after"] == "60"
    async for rig in _rig(upstream, None, OAUTH_PROXY_REGISTRATIONS_PER_MINUTE="100000",
                          OAUTH_PROXY_MAX_REGISTRATIONS="25"):
        statuses = [(await rig.http.post("/oauth/register", json={"redirect_uris": [REDIRECT]})).status_code
                    for _ in range(40)]
        assert statuses.count(201) == 25 and statuses.count(503) == 15
        assert rig.store.count("client") == 25


async def test_registration_metadata_is_checked(rig: Rig) -> None:
    bad = [{"redirect_uris": []}, {"redirect_uris": ["http://evil.example/cb"]},
           {"redirect_uris": ["javascript:alert(1)"]}, {"redirect_uris": [REDIRECT + "#frag"]},
           {"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]},
           {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"}]
    for doc in bad:
        r = await rig.http.post("/oauth/register", json=doc)
        assert r.status_code == 400 and r.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata"), doc
    r = await rig.http.post("/oauth/register", content=b"{" * 20_000, headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert rig.stored() == {}


async def _consent_page(rig: Rig, upstream: UpstreamProvider, client_id: str, challenge: str,
                        sub: str = "mallory-target") -> tuple[httpx.Response, Browser]:
    upstream.set_user(sub)
    r = await rig.http.get(authorize_url(rig.base, client_id, REDIRECT, challenge))
    assert r.status_code == 302
    browser = Browser(f"{rig.base}/oauth/callback")
    landing = browser.walk(r.headers["location"])
    assert landing.query.get("state"), landing
    page = await rig.http.get(landing.url)
    assert page.status_code == 200 and "Allow Desk" in page.text
    return page, browser


async def test_state_tampering_gets_a_page_and_no_code(rig: Rig, upstream: UpstreamProvider) -> None:
    client_id = await rig.register()
    _, challenge = pkce()
    r = await rig.http.get("/oauth/callback?state=made-up&code=x")
    assert r.status_code == 400 and "expired" in r.text
    r = await rig.http.get(authorize_url(rig.base, client_id, REDIRECT, challenge))
    state = parse_qs(urlsplit(r.headers["location"]).query)["state"][0]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(rig.app), base_url=rig.base) as other_browser:
        r = await other_browser.get(f"/oauth/callback?state={state}&code=stolen")
    assert r.status_code == 400 and "does not belong to this browser" in r.text
    assert rig.stored() == {"client": 1}


async def test_consent_csrf_tampering_is_refused_and_the_real_form_works(rig: Rig, upstream: UpstreamProvider) -> None:
    client_id = await rig.register()
    verifier, challenge = pkce()
    page, browser = await _consent_page(rig, upstream, client_id, challenge)
    browser.close()
    action, fields = Browser.form(page.text)
    path = urlsplit(action).path
    tampered = [{**fields, "csrf": fields["csrf"][:-2] + "AA"}, {**fields, "pending": "x" * 43},
                {k: v for k, v in fields.items() if k != "csrf"}]
    for form in tampered:
        r = await rig.http.post(path, data={**form, "decision": "allow"})
        assert r.status_code == 403 and "location" not in r.headers
    r = await rig.http.post(path, data={**fields, "decision": "allow"}, headers={"origin": "https://evil.example"})
    assert r.status_code == 403
    r = await rig.http.post(path, data={**fields, "decision": "allow"}, headers={"sec-fetch-site": "cross-site"})
    assert r.status_code == 403
    async with httpx.AsyncClient(transport=httpx.ASGITransport(rig.app), base_url=rig.base) as other_browser:
        r = await other_browser.post(path, data={**fields, "decision": "allow"})
        assert r.status_code == 403
    assert rig.store.count("code") == 0 and rig.store.count("consent") == 0
    r = await rig.http.post(path, data={**fields, "decision": "allow"})
    assert r.status_code == 303
    code = parse_qs(urlsplit(r.headers["location"]).query)["code"][0]
    # code replay: the second redemption is refused and ends what the first one gave
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": verifier}
    first = await rig.http.post("/oauth/token", data=form)
    assert first.status_code == 200
    replay = await rig.http.post("/oauth/token", data=form)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    refresh = await rig.http.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                        "refresh_token": first.json()["refresh_token"]})
    assert refresh.json()["error"] == "invalid_grant"
    assert rig.store.count("family") == 0


async def test_the_token_endpoint_checks_redirect_verifier_and_client(rig: Rig, upstream: UpstreamProvider) -> None:
    client_id = await rig.register()
    other = await rig.register()
    verifier, challenge = pkce()
    for i, form_change in enumerate(({"redirect_uri": "http://127.0.0.1:9/elsewhere"}, {"code_verifier": "x" * 50},
                                     {"client_id": other}, {"code_verifier": None})):
        page, browser = await _consent_page(rig, upstream, client_id, challenge, sub=f"user-{i}")
        browser.close()
        action, fields = Browser.form(page.text)
        r = await rig.http.post(urlsplit(action).path, data={**fields, "decision": "allow"})
        code = parse_qs(urlsplit(r.headers["location"]).query)["code"][0]
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
                "code_verifier": verifier, **form_change}
        r = await rig.http.post("/oauth/token", data={k: v for k, v in form.items() if v is not None})
        assert r.status_code == 400 and r.json()["error"] == "invalid_grant", (form_change, r.text)
    assert rig.store.count("family") == 0 and rig.store.count("refresh") == 0


async def test_cimd_urls_on_private_addresses_are_refused(strict_rig: Rig, docs: DocServer) -> None:
    rig = strict_rig
    _, challenge = pkce()
    good = docs.json("/client.json", {"client_id": f"{docs.base}/client.json", "redirect_uris": [REDIRECT]})
    port = urlsplit(docs.base).port
    for url in (good, f"https://localhost:{port}/client.json", "https://169.254.169.254/latest/meta-data/client",
                "https://[::1]/client", "https://10.0.0.8/client"):
        r = await rig.http.get(authorize_url(rig.base, url, REDIRECT, challenge))
        _no_redirect(r)
        assert "non-public address" in r.text, url
    assert docs.hits.get("/client.json", 0) == 0, "no connection was made"
    assert rig.stored() == {}


async def test_cimd_documents_are_fetched_within_limits(cimd_rig: Rig, docs: DocServer) -> None:
    rig = cimd_rig
    _, challenge = pkce()
    port = urlsplit(docs.base).port
    cases = {
        docs.redirect("/to-metadata", "https://169.254.169.254/latest/meta-data/"): "another host",
        docs.redirect("/to-loopback", f"https://localhost:{port}/fine.json"): "another host",
        docs.huge("/big-declared", 50 * 1024 * 1024, declare=True): "larger than",
        docs.huge("/big-chunked", 50 * 1024 * 1024, declare=False): "larger than",
        docs.slow("/slow", 30): "no complete answer",
        docs.json("/wrong-id.json", {"client_id": "https://other.example/c",
                                     "redirect_uris": [REDIRECT]}): "not its URL",
        docs.json("/secret.json", {"client_id": f"{docs.base}/secret.json", "redirect_uris": [REDIRECT],
                                   "token_endpoint_auth_method": "client_secret_post"}): "not allowed",
    }
    docs.json("/fine.json", {"client_id": f"https://localhost:{port}/fine.json", "redirect_uris": [REDIRECT]})
    for url, why in cases.items():
        started = time.monotonic()
        r = await rig.http.get(authorize_url(rig.base, url, REDIRECT, challenge))
        _no_redirect(r)
        assert why in r.text, (url, r.text[-600:])
        assert time.monotonic() - started < 5, url
    assert rig.stored() == {}


async def test_a_cimd_client_is_cached_by_its_headers_and_redirects_match_exactly(cimd_rig: Rig,
                                                                                  docs: DocServer) -> None:
    rig = cimd_rig
    _, challenge = pkce()
    url = docs.json("/desk.json", {"client_id": f"{docs.base}/desk.json", "client_name": "Desk",
                                   "redirect_uris": ["https://desk.example/cb", REDIRECT]}, cache="max-age=600")
    for _ in range(3):
        r = await rig.http.get(authorize_url(rig.base, url, "https://desk.example/cb", challenge))
        assert r.status_code == 302
    assert docs.hits["/desk.json"] == 1
    r = await rig.http.get(authorize_url(rig.base, url, "https://desk.example/cb/", challenge))
    _no_redirect(r)
    nostore = docs.json("/nostore.json", {"client_id": f"{docs.base}/nostore.json", "redirect_uris": [REDIRECT]},
                        cache="no-store")
    for _ in range(2):
        assert (await rig.http.get(authorize_url(rig.base, nostore, REDIRECT, challenge))).status_code == 302
    assert docs.hits["/nostore.json"] == 2


def test_the_signing_key_is_required_and_long(upstream: UpstreamProvider) -> None:
    from mcpcore.errors import ConfigurationError

    env = proxy_env(upstream, "http://127.0.0.1:1")
    for key, message in (("", "MCP_AUTH_SIGNING_KEY is required"), ("short", "at least 32 characters"),
                         (f"{SIGNING_KEY},short", "at least 32 characters")):
        with pytest.raises(ConfigurationError, match=message):
            OAuthProxy.from_settings(Settings.from_env({**env, "MCP_AUTH_SIGNING_KEY": key}))
    with pytest.raises(ConfigurationError, match="MCP_PUBLIC_URL is required"):
        OAuthProxy.from_settings(Settings.from_env({**env, "MCP_PUBLIC_URL": ""}))


async def test_dpop_bound_tokens_from_our_token_endpoint(upstream: UpstreamProvider) -> None:
    from tests.auth.dpop_client import DPoPAuth, DPoPKey

    async for rig in _rig(upstream, None, MCP_AUTH_DPOP="required"):
        meta = (await rig.http.get("/.well-known/oauth-authorization-server")).json()
        assert "ES256" in meta["dpop_signing_alg_values_supported"]
        client_id = await rig.register()
        verifier, challenge = pkce()
        page, browser = await _consent_page(rig, upstream, client_id, challenge, sub="dpop-user")
        browser.close()
        action, fields = Browser.form(page.text)
        r = await rig.http.post(urlsplit(action).path, data={**fields, "decision": "allow"})
        code = parse_qs(urlsplit(r.headers["location"]).query)["code"][0]
        key, other = DPoPKey(), DPoPKey()
        token_url = f"{rig.base}/oauth/token"
        r = await rig.http.post("/oauth/token", headers={"dpop": key.proof("POST", token_url)}, data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": verifier})
        assert r.status_code == 200, r.text
        tokens = r.json()
        assert tokens["token_type"] == "DPoP"
        h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
             "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "whoami"}
        req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}, "name": "whoami", "arguments": {}}}
        r = await rig.http.post("/mcp", json=req, headers=h, auth=DPoPAuth(key, tokens["access_token"]))
        assert r.status_code == 200 and r.json()["result"]["structuredContent"]["subject"] == "dpop-user", r.text
        r = await rig.http.post("/mcp", json=req, headers=h, auth=DPoPAuth(other, tokens["access_token"]))
        assert r.status_code == 401
        r = await rig.http.post("/mcp", json=req, headers={**h, "authorization": f"Bearer {tokens['access_token']}"})
        assert r.status_code == 401
        refresh = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": tokens["refresh_token"]}
        r = await rig.http.post("/oauth/token", data=refresh)
        assert r.json()["error"] == "invalid_dpop_proof"
        r = await rig.http.post("/oauth/token", data=refresh, headers={"dpop": other.proof("POST", token_url)})
        assert r.json()["error"] in ("invalid_dpop_proof", "invalid_grant")


async def test_a_metadata_document_client_with_private_key_jwt(cimd_rig: Rig, docs: DocServer,
                                                               upstream: UpstreamProvider) -> None:
    import jwt
    from cryptography.hazmat.primitives.asymmetric import ec

    rig = cimd_rig
    key = ec.generate_private_key(ec.SECP256R1())
    public = {**jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "k1", "alg": "ES256"}
    client_id = docs.json("/signed.json", {"client_id": f"{docs.base}/signed.json", "client_name": "Desk",
                                           "redirect_uris": [REDIRECT],
                                           "token_endpoint_auth_method": "private_key_jwt",
                                           "jwks": {"keys": [public]}})
    verifier, challenge = pkce()
    page, browser = await _consent_page(rig, upstream, client_id, challenge, sub="signed-user")
    browser.close()
    action, fields = Browser.form(page.text)
    r = await rig.http.post(urlsplit(action).path, data={**fields, "decision": "allow"})
    code = parse_qs(urlsplit(r.headers["location"]).query)["code"][0]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": verifier}

    def assertion(signer: Any = key, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": client_id, "sub": client_id, "aud": f"{rig.base}/oauth/token", "iat": now, "exp": now + 60,
                "jti": f"jti-{time.monotonic_ns()}", **claims}
        return jwt.encode(body, signer, algorithm="ES256", headers={"kid": "k1"})

    kind = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    r = await rig.http.post("/oauth/token", data=form)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    for bad in (assertion(ec.generate_private_key(ec.SECP256R1())), assertion(aud="https://elsewhere.example/token"),
                assertion(sub="someone-else")):
        r = await rig.http.post("/oauth/token", data={**form, "client_assertion_type": kind, "client_assertion": bad})
        assert r.status_code == 401 and r.json()["error"] == "invalid_client", r.text
    good = assertion()
    r = await rig.http.post("/oauth/token", data={**form, "client_assertion_type": kind, "client_assertion": good})
    assert r.status_code == 200, r.text
    r = await rig.http.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                  "refresh_token": r.json()["refresh_token"],
                                                  "client_assertion_type": kind, "client_assertion": good})
    assert r.status_code == 401 and "already used" in r.json()["error_description"]


async def test_sign_ins_started_per_source_are_bounded(rig: Rig) -> None:
    client_id = await rig.register()
    _, challenge = pkce()
    url = authorize_url(rig.base, client_id, REDIRECT, challenge)
    statuses = [(await rig.http.get(url)).status_code for _ in range(70)]
    assert statuses == [302] * 60 + [429] * 10
    assert rig.store.count("txn") == 60
