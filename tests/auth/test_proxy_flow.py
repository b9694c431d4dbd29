"""MCP_AUTH_MODE=proxy end to end: a real uvicorn serving tests.apps.proxied as the
authorization server, the login at a real oidc-provider (scripted), a registered client going
from 401 through the metadata, registration, consent and tokens to a called tool."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.auth.upstream import (
    Browser,
    UpstreamProvider,
    authorize_url,
    call_tool,
    pkce,
    register,
    run_proxied,
)

pytestmark = pytest.mark.slow
REDIRECT = "http://127.0.0.1:9/callback"


@pytest.fixture(scope="module")
def server(upstream: UpstreamProvider) -> Iterator[str]:
    with run_proxied(upstream) as base:
        yield base


def _tokens(base: str, client_id: str, landing_code: str, verifier: str) -> dict[str, Any]:
    r = httpx.post(f"{base}/oauth/token", data={"grant_type": "authorization_code", "code": landing_code,
                                                "redirect_uri": REDIRECT, "client_id": client_id,
                                                "code_verifier": verifier})
    assert r.status_code == 200, r.text
    return dict(r.json())


@pytest.fixture
def browser() -> Iterator[Browser]:
    b = Browser(REDIRECT)
    yield b
    b.close()


def sign_in(base: str, upstream: UpstreamProvider, browser: Browser, *, client_id: str | None = None,
            scope: str | None = None, sub: str = "alice") -> tuple[str, dict[str, Any]]:
    """A whole flow through the consent page; ``(client_id, tokens)``."""
    upstream.set_user(sub)
    client_id = client_id or register(base, REDIRECT)["client_id"]
    verifier, challenge = pkce()
    landing = browser.walk(authorize_url(base, client_id, REDIRECT, challenge, scope=scope))
    if not landing.query:
        assert landing.status == 200 and "Allow" in landing.page, landing.page[:500]
        landing = browser.decide(landing.page)
    assert landing.query.get("state") == "client-state-1" and landing.query.get("iss") == base, landing
    return client_id, _tokens(base, client_id, landing.query["code"], verifier)


def test_from_401_to_a_called_tool(server: str, upstream: UpstreamProvider, browser: Browser) -> None:
    r = call_tool(server, "not-a-token", "whoami")
    assert r.status_code == 401
    prm_url = r.headers["www-authenticate"].split('resource_metadata="')[1].split('"')[0]
    prm = httpx.get(prm_url).json()
    assert prm["authorization_servers"] == [server] and prm["resource"] == f"{server}/mcp"
    assert prm["scopes_supported"] == ["tools:read"]
    meta = httpx.get(f"{server}/.well-known/oauth-authorization-server").json()
    assert meta["issuer"] == server and meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["client_id_metadata_document_supported"] is True

    client_id, tokens = sign_in(server, upstream, browser, sub="alice")
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "tools:read"
    r = call_tool(server, tokens["access_token"], "whoami")
    assert r.status_code == 200, r.text
    assert r.json()["result"]["structuredContent"] == {"subject": "alice", "tenant": "acme", "client": client_id,
                                                       "scopes": ["tools:read"]}
    # the upstream token stays on the server, and the server's own code can use it
    assert "upstream" not in str(tokens)
    r = call_tool(server, tokens["access_token"], "provider_profile")
    assert r.json()["result"]["structuredContent"] == {"status": 200, "sub": "alice"}


def test_consent_is_remembered_per_user_and_client(server: str, upstream: UpstreamProvider,
                                                  browser: Browser) -> None:
    client_id, _ = sign_in(server, upstream, browser, sub="bob")
    _, challenge = pkce()
    again = browser.walk(authorize_url(server, client_id, REDIRECT, challenge))
    assert again.query.get("code"), "the same user, client and scopes: no second consent page"
    # another user in the same browser is asked
    upstream.set_user("carol")
    other = Browser(REDIRECT)
    first = other.walk(authorize_url(server, client_id, REDIRECT, challenge))
    other.close()
    assert first.status == 200 and "Allow Test Desk" in first.page
    # the only cookie is the fixed-size browser id, whatever the number of flows
    cookies = [c for c in browser.http.cookies.jar if c.domain.startswith("127.0.0.1")]
    assert [c.name for c in cookies if "mcpcore" in c.name] == ["mcpcore_as_browser"]


def test_refresh_rotates_and_reuse_revokes_the_family(server: str, upstream: UpstreamProvider,
                                                     browser: Browser) -> None:
    client_id, tokens = sign_in(server, upstream, browser, sub="dave")
    first = tokens["refresh_token"]
    r = httpx.post(f"{server}/oauth/token", data={"grant_type": "refresh_token", "refresh_token": first,
                                                  "client_id": client_id})
    assert r.status_code == 200, r.text
    second = r.json()["refresh_token"]
    assert second != first
    assert call_tool(server, r.json()["access_token"], "whoami").status_code == 200
    reuse = httpx.post(f"{server}/oauth/token", data={"grant_type": "refresh_token", "refresh_token": first,
                                                      "client_id": client_id})
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
    after = httpx.post(f"{server}/oauth/token", data={"grant_type": "refresh_token", "refresh_token": second,
                                                      "client_id": client_id})
    assert after.status_code == 400 and after.json()["error"] == "invalid_grant", "the family is revoked"


def test_revocation_ends_the_grant(server: str, upstream: UpstreamProvider, browser: Browser) -> None:
    client_id, tokens = sign_in(server, upstream, browser, sub="erin")
    r = httpx.post(f"{server}/oauth/revoke", data={"token": tokens["access_token"], "client_id": client_id})
    assert r.status_code == 200
    r = httpx.post(f"{server}/oauth/token", data={"grant_type": "refresh_token",
                                                  "refresh_token": tokens["refresh_token"], "client_id": client_id})
    assert r.json()["error"] == "invalid_grant"
    r = call_tool(server, tokens["access_token"], "provider_profile")
    assert r.json()["result"]["isError"] is True and "upstream_token_unavailable" in r.text


def test_upstream_refusal_and_denied_consent_reach_the_client(server: str, upstream: UpstreamProvider,
                                                              browser: Browser) -> None:
    client_id = register(server, REDIRECT)["client_id"]
    _, challenge = pkce()
    upstream.set_user("oscar", refuse=True)
    try:
        page = browser.walk(authorize_url(server, client_id, REDIRECT, challenge))
    finally:
        upstream.set_user("oscar")
    assert page.status == 403 and "The sign-in was refused" in page.page and "the user said no" in page.page
    assert "Traceback" not in page.page and 'href="http://127.0.0.1:9/callback?error=access_denied' in page.page
    page = browser.walk(authorize_url(server, client_id, REDIRECT, challenge))
    denied = browser.decide(page.page, "deny")
    assert denied.query["error"] == "access_denied" and denied.query["state"] == "client-state-1"


def test_the_upstream_token_is_refreshed_when_it_expires(server: str, upstream: UpstreamProvider,
                                                         browser: Browser) -> None:
    upstream.set_access_ttl(5)  # under the 30 s margin: every use refreshes it
    try:
        _, tokens = sign_in(server, upstream, browser, sub="peggy")
        before = upstream.stats()
        for _ in range(2):
            r = call_tool(server, tokens["access_token"], "provider_profile")
            assert r.json()["result"]["structuredContent"] == {"status": 200, "sub": "peggy"}, r.text
    finally:
        upstream.set_access_ttl(3600)
    assert upstream.stats()["refreshes"] == before["refreshes"] + 2
