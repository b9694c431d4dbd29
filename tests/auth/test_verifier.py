"""Auth as a replaceable layer: your own TokenVerifier behind the framework's door, and RFC 7662
token introspection (``MCP_AUTH_MODE=introspection``) with its cache."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

import httpx
import pytest

from mcpcore import AuthInfo, ConfigurationError, Context, McpApp, Settings, tool
from mcpcore.auth import AuthError, create_authenticator
from mcpcore.auth.introspection import IntrospectionVerifier
from mcpcore.testing import McpTestClient

from .conftest import FakeClock

pytestmark = pytest.mark.anyio
URL = "https://as.example.com/introspect"


@tool
async def whoami(ctx: Context) -> str:
    """Who is calling."""
    assert ctx.auth is not None
    return f"{ctx.auth.client_id}/{ctx.auth.subject}/{ctx.tenant_id}/{','.join(ctx.auth.scopes)}"


@tool(auth=["admin"])
async def admin_only() -> str:
    """Admins only."""
    return "ok"


class ApiKeys:
    def __init__(self) -> None:
        self.started = self.closed = False

    async def start(self) -> None:
        self.started = True

    async def close(self) -> None:
        self.closed = True

    async def verify_token(self, token: str) -> AuthInfo | None:
        if token == "boom":
            raise RuntimeError("database down")
        if token == "key-1":
            return AuthInfo(client_id="svc", subject="robot", tenant_id="acme", scopes=("read",))
        return None


async def test_a_token_verifier_replaces_the_built_in_modes() -> None:
    keys = ApiKeys()
    app = McpApp("custom", tools=[whoami, admin_only], auth=keys, settings=Settings.from_env({}))
    assert app.settings.auth_mode == "custom"
    async with McpTestClient(app, era="modern", headers={"authorization": "Bearer key-1"}) as c:
        assert keys.started
        assert (await c.call_tool("whoami"))["content"][0]["text"] == "svc/robot/acme/read"
        r = await c.post({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": c.envelope(
            {"name": "admin_only", "arguments": {}})}, c.headers("tools/call", {"name": "admin_only"}))
        assert r.status_code == 403  # scope checks apply as with jwt and oauth
        for token, status in (("nope", 401), ("boom", 503)):
            r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": c.envelope({})},
                             {**c.headers("tools/list"), "authorization": f"Bearer {token}"})
            assert r.status_code == status
            assert ("www-authenticate" in r.headers) == (status == 401)
        r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": c.envelope({})},
                         {k: v for k, v in c.headers("tools/list").items() if k != "authorization"})
        assert r.status_code == 401
    assert keys.closed


def test_auth_and_an_auth_mode_together_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        McpApp("x", auth=ApiKeys(), settings=Settings.from_env({}, auth_mode="jwt", auth_secret_key="k" * 40))


class Endpoint:
    """An RFC 7662 endpoint behind httpx.MockTransport."""

    def __init__(self) -> None:
        self.calls = 0
        self.status = 200
        self.delay = 0.0
        self.seen_auth: str | None = None
        self.tokens: dict[str, dict[str, Any]] = {
            "good": {"active": True, "client_id": "app", "sub": "ada", "scope": "read admin", "tid": "acme",
                     "exp": int(time.time()) + 600, "iss": "https://as.example.com", "aud": "mcp"},
            "other-aud": {"active": True, "client_id": "app", "aud": "elsewhere", "iss": "https://as.example.com"},
        }

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        self.seen_auth = request.headers.get("authorization")
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.status != 200:
            return httpx.Response(self.status)
        form = dict(x.split("=", 1) for x in request.content.decode().split("&"))
        assert form["token_type_hint"] == "access_token"
        return httpx.Response(200, json=self.tokens.get(form["token"], {"active": False}))


def verifier(endpoint: Endpoint, clock: FakeClock | None = None, **kw: Any) -> IntrospectionVerifier:
    return IntrospectionVerifier(URL, client_id="mcp-server", client_secret="s3cret", issuer="https://as.example.com",
                                 audience="mcp", transport=httpx.MockTransport(endpoint),
                                 clock=clock or time.monotonic, **kw)


async def test_an_active_token_becomes_the_identity_and_is_cached(clock: FakeClock) -> None:
    endpoint = Endpoint()
    v = verifier(endpoint, clock, cache_ttl=60)
    info = await v.verify_token("good")
    assert info is not None and (info.client_id, info.subject, info.tenant_id) == ("app", "ada", "acme")
    assert info.scopes == ("read", "admin")
    assert endpoint.seen_auth == "Basic " + base64.b64encode(b"mcp-server:s3cret").decode()
    assert await v.verify_token("good") == info and endpoint.calls == 1
    clock.advance(61)
    await v.verify_token("good")
    assert endpoint.calls == 2
    await v.close()


async def test_inactive_tokens_are_refused_and_cached_briefly(clock: FakeClock) -> None:
    endpoint = Endpoint()
    v = verifier(endpoint, clock)
    assert await v.verify_token("stolen") is None
    assert await v.verify_token("stolen") is None and endpoint.calls == 1
    clock.advance(31)
    assert await v.verify_token("stolen") is None and endpoint.calls == 2


async def test_concurrent_requests_with_one_token_share_one_call() -> None:
    endpoint = Endpoint()
    endpoint.delay = 0.05
    v = verifier(endpoint)
    results = await asyncio.gather(*(v.verify_token("good") for _ in range(20)))
    assert all(r is not None for r in results) and endpoint.calls == 1


async def test_an_endpoint_that_cannot_answer_is_503_and_checks_apply() -> None:
    endpoint = Endpoint()
    v = verifier(endpoint)
    with pytest.raises(AuthError) as e:
        await v.verify_token("other-aud")
    assert e.value.status == 401 and e.value.reason == "audience"
    endpoint.status = 500
    with pytest.raises(AuthError) as e:
        await v.verify_token("good")
    assert e.value.status == 503


async def test_introspection_mode_from_the_settings_at_the_door() -> None:
    endpoint = Endpoint()
    settings = Settings.from_env({}, auth_mode="introspection", oauth_introspection_url=URL,
                                 oauth_introspection_client_id="mcp-server",
                                 oauth_issuer_url="https://as.example.com", oauth_audience="mcp")
    auth = create_authenticator(settings, transport=httpx.MockTransport(endpoint))
    assert auth is not None and auth.mode == "introspection"
    app = McpApp("intro", tools=[whoami], auth=auth, settings=Settings.from_env({}))
    async with McpTestClient(app, headers={"authorization": "Bearer good"}) as c:
        assert (await c.call_tool("whoami"))["content"][0]["text"] == "app/ada/acme/read,admin"
        assert (await c.call_tool("whoami"))["content"][0]["text"] == "app/ada/acme/read,admin"
    assert endpoint.calls == 1
    with pytest.raises(ConfigurationError, match="OAUTH_INTROSPECTION_URL"):
        create_authenticator(Settings.from_env({}, auth_mode="introspection"))
    doc_settings = Settings.from_env({"MCP_AUTH_MODE": "introspection", "OAUTH_INTROSPECTION_URL": URL,
                                      "OAUTH_ISSUER_URL": "https://as.example.com"})
    from mcpcore.auth import protected_resource_metadata

    assert protected_resource_metadata(doc_settings, "https://mcp.example.com")["authorization_servers"] == [
        "https://as.example.com"]
