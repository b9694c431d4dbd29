"""CORS on the authorization server for browser-based clients: with ``MCP_CORS_ALLOWED_ORIGINS``,
a page on an allowed origin may read the protected-resource and authorization-server metadata and
the keys, and call the registration, token and revocation endpoints (their preflights answered);
other origins, and the sign-in and consent pages a person is sent to, get no CORS grant."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from mcpcore import McpApp, Settings
from mcpcore.auth.proxy import OAuthProxy
from tests.apps.proxied import whoami
from tests.auth.upstream import SIGNING_KEY

pytestmark = pytest.mark.anyio
BASE = "http://127.0.0.1:8125"
ORIGIN = "https://chat.example"
PRM = "/.well-known/oauth-protected-resource/mcp"
ENDPOINTS = [(PRM, "GET"), ("/.well-known/oauth-authorization-server", "GET"), ("/oauth/jwks", "GET"),
             ("/oauth/register", "POST"), ("/oauth/token", "POST"), ("/oauth/revoke", "POST")]


async def _client(**env: str) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings.from_env({"MCP_PUBLIC_URL": BASE, "MCP_AUTH_SIGNING_KEY": SIGNING_KEY,
                                  "OAUTH_UPSTREAM_PRESET": "github", "OAUTH_UPSTREAM_CLIENT_ID": "Iv1.abc",
                                  "OAUTH_UPSTREAM_CLIENT_SECRET": "s", **env})
    proxy = OAuthProxy.from_settings(settings, transport=httpx.MockTransport(lambda r: httpx.Response(404)))
    app = McpApp("browser", tools=[whoami], auth=proxy, settings=settings)
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as http:
            yield http
    finally:
        await app.shutdown()


@pytest.fixture
async def cors() -> AsyncIterator[httpx.AsyncClient]:
    async for http in _client(MCP_CORS_ALLOWED_ORIGINS=ORIGIN):
        yield http


@pytest.fixture
async def no_cors() -> AsyncIterator[httpx.AsyncClient]:
    async for http in _client():
        yield http


def _preflight(origin: str, method: str) -> dict[str, str]:
    return {"origin": origin, "access-control-request-method": method,
            "access-control-request-headers": "content-type, dpop"}


async def test_an_allowed_origin_gets_the_metadata_registers_and_calls_the_token_endpoint(
        cors: httpx.AsyncClient) -> None:
    for path, method in ENDPOINTS:
        r = await cors.options(path, headers=_preflight(ORIGIN, method))
        assert r.status_code == 204, (path, r.text)
        assert r.headers["access-control-allow-origin"] == ORIGIN, path
        assert method in r.headers["access-control-allow-methods"] and r.headers["vary"] == "Origin", path
        assert r.headers["access-control-allow-headers"] == "content-type, dpop", path
    h = {"origin": ORIGIN}
    prm = await cors.get(PRM, headers=h)
    assert prm.status_code == 200 and prm.headers["access-control-allow-origin"] == ORIGIN, prm.text
    assert prm.json()["authorization_servers"] == [BASE]
    meta = await cors.get("/.well-known/oauth-authorization-server", headers=h)
    assert meta.status_code == 200 and meta.headers["access-control-allow-origin"] == ORIGIN
    head = await cors.head("/oauth/jwks", headers=h)
    assert head.status_code == 200 and head.headers["access-control-allow-origin"] == ORIGIN
    reg = await cors.post("/oauth/register", headers=h, json={"redirect_uris": [f"{ORIGIN}/callback"],
                                                              "token_endpoint_auth_method": "none"})
    assert reg.status_code == 201 and reg.headers["access-control-allow-origin"] == ORIGIN, reg.text
    token = await cors.post("/oauth/token", headers=h, data={
        "grant_type": "authorization_code", "code": "not-a-code", "client_id": reg.json()["client_id"],
        "redirect_uri": f"{ORIGIN}/callback", "code_verifier": "v" * 43})
    assert token.status_code == 400 and token.json()["error"] == "invalid_grant"
    assert token.headers["access-control-allow-origin"] == ORIGIN  # the page can read the error
    assert "www-authenticate" in token.headers["access-control-expose-headers"]
    revoke = await cors.post("/oauth/revoke", headers=h, data={"token": "unknown",
                                                              "client_id": reg.json()["client_id"]})
    assert revoke.status_code == 200 and revoke.headers["access-control-allow-origin"] == ORIGIN


async def test_no_grant_for_other_origins_nor_for_the_sign_in_pages(cors: httpx.AsyncClient) -> None:
    evil = "https://evil.example"
    r = await cors.options("/oauth/token", headers=_preflight(evil, "POST"))
    assert r.status_code == 204 and "access-control-allow-origin" not in r.headers
    r = await cors.post("/oauth/token", headers={"origin": evil}, data={"grant_type": "refresh_token"})
    assert r.status_code in (400, 401) and "access-control-allow-origin" not in r.headers
    assert (await cors.get(PRM, headers={"origin": evil})).status_code == 403
    for path in ("/oauth/authorize", "/oauth/callback", "/oauth/consent"):
        r = await cors.options(path, headers=_preflight(ORIGIN, "POST"))
        assert r.status_code == 405 and "access-control-allow-origin" not in r.headers, path
    r = await cors.get("/oauth/authorize", headers={"origin": ORIGIN}, params={"client_id": "nobody"})
    assert r.status_code == 400 and "access-control-allow-origin" not in r.headers
    r = await cors.post("/oauth/consent", headers={"origin": ORIGIN}, data={"pending": "x", "csrf": "y"})
    assert r.status_code == 403 and "access-control-allow-origin" not in r.headers


async def test_cors_stays_off_without_allowed_origins(no_cors: httpx.AsyncClient) -> None:
    r = await no_cors.options("/oauth/token", headers=_preflight(ORIGIN, "POST"))
    assert r.status_code == 204 and r.headers["allow"] == "POST, OPTIONS"
    assert "access-control-allow-origin" not in r.headers
    r = await no_cors.post("/oauth/register", headers={"origin": ORIGIN}, json={"redirect_uris": [f"{ORIGIN}/cb"]})
    assert r.status_code == 201 and "access-control-allow-origin" not in r.headers
    assert (await no_cors.get(PRM, headers={"origin": ORIGIN})).status_code == 403
