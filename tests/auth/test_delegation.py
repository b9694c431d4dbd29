"""Delegated calls downstream: a tool gets a token for a named audience by RFC 8693 token
exchange at a real authorization server (oidc-provider, its grant registered through
registerGrantType), sends it to a real downstream API (uvicorn) through the httpx auth hook,
caches it per caller, audience and scopes (in Redis across two instances) and refreshes it after
expiry; every failure is a tool error with a recovery hint, and the caller's token never leaves."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Annotated, Any

import httpx
import jwt
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpcore import ConfigurationError, Context, Depends, McpApp, Settings, tool
from mcpcore.auth import HostIdentity
from mcpcore.auth.delegation import (
    Audience,
    DelegatedAuth,
    Delegation,
    DownstreamToken,
    delegated_auth,
    delegated_token,
)
from mcpcore.auth.token_exchange import TokenExchange
from mcpcore.testing import McpTestClient
from tests.auth.provider import SUBJECT_SECRET, Provider

pytestmark = pytest.mark.anyio
BILLING = "https://billing.example"
ERROR_META = "dev.mcpcore/error"


def caller_token(sub: str = "alice", tid: str = "acme") -> str:
    return jwt.encode({"sub": sub, "cid": "desktop", "tid": tid, "exp": int(time.time()) + 300}, SUBJECT_SECRET)


ACTOR = jwt.encode({"sub": "reports-mcp", "exp": int(time.time()) + 3600}, SUBJECT_SECRET)


class Downstream:
    """A real downstream API: verifies the delegated JWT with the provider's keys and answers
    with its claims; can refuse the next token it sees (a revoked one)."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.seen: list[str] = []
        self.refuse_next = False
        self.url = ""

    async def invoices(self, request: Request) -> JSONResponse:
        authorization = request.headers.get("authorization", "")
        self.seen.append(authorization)
        if self.refuse_next:
            self.refuse_next = False
            return JSONResponse({"error": "revoked"}, status_code=401)
        token = authorization.removeprefix("Bearer ")
        keys = httpx.get(self.provider.jwks_uri).json()["keys"]
        claims = jwt.decode(token, jwt.PyJWK(keys[0]), algorithms=["ES256"], audience=BILLING,
                            issuer=self.provider.issuer)
        return JSONResponse({k: claims.get(k) for k in ("sub", "tid", "aud", "act", "scope", "client_id")})


@pytest.fixture
def downstream(provider: Provider) -> Iterator[Downstream]:
    api = Downstream(provider)
    provider.set_exchange_ttl(300)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/invoices", api.invoices)]), log_level="warning",
                                           lifespan="off", http="h11", ws="none"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    api.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    yield api
    server.should_exit = True
    thread.join(5)
    sock.close()


@tool
async def invoices(ctx: Context, auth: Annotated[httpx.Auth, Depends(delegated_auth("billing"))]) -> dict[str, Any]:
    """The caller's invoices, from the billing API, on the caller's behalf."""
    async with httpx.AsyncClient(auth=auth) as http:
        r = await http.get(f"{ctx.app_state.downstream}/invoices")
        r.raise_for_status()
        return dict(r.json())


@tool
async def billing_token(token: Annotated[DownstreamToken, Depends(delegated_token("billing"))]) -> str:
    """Which delegated token this call got (a digest of it)."""
    return hashlib.sha256(token.access_token.encode()).hexdigest()[:16]


@tool
async def forbidden(token: Annotated[DownstreamToken, Depends(delegated_token("forbidden"))]) -> str:
    """An audience the authorization server will not grant."""
    return "unreachable"


@tool
async def nowhere(token: Annotated[DownstreamToken, Depends(delegated_token("nowhere"))]) -> str:
    """An audience nobody configured."""
    return "unreachable"


def delegation(provider: Provider, url: str | None = None) -> Delegation:
    exchange = TokenExchange(url or provider.token_endpoint, client_id="mcp-server",
                             client_secret="mcp-server-secret", actor_token=lambda: ACTOR)
    return Delegation(exchange, {"billing": Audience(BILLING, scopes=("invoices:read",)),
                                 "forbidden": "https://forbidden.example"})


def app_for(provider: Provider, downstream: Downstream, **env: str) -> McpApp:
    app = McpApp("reports", tools=[invoices, billing_token, forbidden, nowhere], delegation=delegation(provider),
                 settings=Settings.from_env({"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SUBJECT_SECRET, **env}))
    app.state.downstream = downstream.url
    return app


def failure(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"], result
    return dict(result["_meta"][ERROR_META])


async def test_a_tool_calls_downstream_with_an_exchanged_token(provider: Provider, downstream: Downstream) -> None:
    app = app_for(provider, downstream)
    alice, bob = caller_token(), caller_token("bob", "globex")
    before = provider.stats()["exchanges"]
    async with McpTestClient(app, era="modern", headers={"authorization": f"Bearer {alice}"}) as a, \
            McpTestClient(app, era="modern", headers={"authorization": f"Bearer {bob}"}) as b:
        seen = (await a.call_tool("invoices"))["structuredContent"]
        assert seen == {"sub": "alice", "tid": "acme", "aud": BILLING, "act": {"sub": "reports-mcp"},
                        "scope": "invoices:read", "client_id": "mcp-server"}
        assert (await a.call_tool("invoices"))["structuredContent"]["sub"] == "alice"
        assert provider.stats()["exchanges"] == before + 1  # the second call reused the cached token
        assert (await b.call_tool("invoices"))["structuredContent"]["tid"] == "globex"
        assert provider.stats()["exchanges"] == before + 2
    assert all(alice not in h and bob not in h for h in downstream.seen)  # the callers' tokens stayed here


async def test_the_cache_is_shared_by_two_instances_and_refreshed_after_expiry(
        provider: Provider, downstream: Downstream, redis_url: str) -> None:
    provider.set_exchange_ttl(8)  # cached for half of that: the margin is at most half a token's life
    env = {"MCP_SESSION_STORE": "redis", "REDIS_URL": redis_url}
    one, two = app_for(provider, downstream, **env), app_for(provider, downstream, **env)
    header = {"authorization": f"Bearer {caller_token('carol', 'initech')}"}
    before = provider.stats()["exchanges"]
    async with McpTestClient(one, era="modern", headers=header) as a, \
            McpTestClient(two, era="modern", headers=header) as b:
        first = (await a.call_tool("billing_token"))["content"][0]["text"]
        assert (await b.call_tool("billing_token"))["content"][0]["text"] == first
        assert provider.stats()["exchanges"] == before + 1
        await asyncio.sleep(4.3)
        second = (await b.call_tool("billing_token"))["content"][0]["text"]
        assert second != first and provider.stats()["exchanges"] == before + 2
        assert (await a.call_tool("billing_token"))["content"][0]["text"] == second
        assert (await a.call_tool("invoices"))["structuredContent"]["sub"] == "carol"
        assert provider.stats()["exchanges"] == before + 2


async def test_a_refused_token_is_dropped_and_exchanged_again_once(provider: Provider,
                                                                 downstream: Downstream) -> None:
    app = app_for(provider, downstream)
    async with McpTestClient(app, era="modern", headers={"authorization": f"Bearer {caller_token()}"}) as c:
        await c.call_tool("invoices")
        before = provider.stats()["exchanges"]
        downstream.refuse_next = True
        assert (await c.call_tool("invoices"))["structuredContent"]["sub"] == "alice"
        assert provider.stats()["exchanges"] == before + 1
        assert downstream.seen[-2] != downstream.seen[-1]


async def test_failures_are_tool_errors_with_a_recovery_hint(provider: Provider, downstream: Downstream) -> None:
    app = app_for(provider, downstream)
    seen = len(downstream.seen)
    async with McpTestClient(app, era="modern", headers={"authorization": f"Bearer {caller_token()}"}) as c:
        refused = failure(await c.call_tool("forbidden"))
        assert refused["code"] == -32005 and refused["data"]["reason"] == "delegation_refused"
        assert "invalid_target" in refused["message"] and refused["data"]["recovery"]["hint"]
        unknown = failure(await c.call_tool("nowhere"))
        assert unknown["data"]["reason"] == "delegation_unknown_audience" and "billing" in unknown["message"]
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    down = McpApp("down", tools=[invoices], settings=app.settings,
                  delegation=delegation(provider, f"http://127.0.0.1:{closed.getsockname()[1]}/token"))
    down.state.downstream = downstream.url
    async with McpTestClient(down, era="modern", headers={"authorization": f"Bearer {caller_token()}"}) as c:
        unavailable = failure(await c.call_tool("invoices"))
        assert unavailable["code"] == -32000 and unavailable["data"]["reason"] == "delegation_unavailable"
        assert unavailable["data"]["retryable"] is True
    closed.close()
    plain = McpApp("plain", tools=[invoices], auth=HostIdentity(), settings=Settings.from_env({}),
                   delegation=delegation(provider))
    plain.state.downstream = downstream.url
    await plain.startup()
    try:
        async def host_app(scope: Any, receive: Any, send: Any) -> None:
            from starlette.authentication import AuthCredentials, SimpleUser

            scope["user"], scope["auth"] = SimpleUser("dave"), AuthCredentials()
            await plain(scope, receive, send)

        async with McpTestClient(host_app, era="modern") as c:
            no_token = failure(await c.call_tool("invoices"))
            assert no_token["data"]["reason"] == "delegation_no_token" and no_token["code"] == -32006
    finally:
        await plain.shutdown()
    unconfigured = McpApp("none", tools=[invoices], settings=Settings.from_env({}))
    async with McpTestClient(unconfigured, era="modern") as c:
        assert failure(await c.call_tool("invoices"))["data"]["reason"] == "delegation_not_configured"
    assert len(downstream.seen) == seen  # no request went downstream without a delegated token


def test_settings_form_and_the_sync_client(provider: Provider) -> None:
    env = {"MCP_TOKEN_EXCHANGE_URL": provider.token_endpoint, "MCP_TOKEN_EXCHANGE_CLIENT_ID": "mcp-server",
           "MCP_TOKEN_EXCHANGE_CLIENT_SECRET": "mcp-server-secret",
           "MCP_TOKEN_EXCHANGE_AUDIENCES": f"billing={BILLING}, crm=https://crm.example"}
    app = McpApp("env", settings=Settings.from_env(env))
    assert app.delegation is not None and sorted(app.delegation.audiences) == ["billing", "crm"]
    assert app.delegation.audiences["crm"].audience == "https://crm.example"
    assert "secret" not in repr(app.delegation)
    with pytest.raises(ConfigurationError, match="MCP_TOKEN_EXCHANGE_AUDIENCES must be name=audience"):
        McpApp("bad", settings=Settings.from_env({**env, "MCP_TOKEN_EXCHANGE_AUDIENCES": "billing"}))
    with pytest.raises(ConfigurationError, match="replaces MCP_TOKEN_EXCHANGE_URL"):
        McpApp("both", settings=Settings.from_env(env), delegation=delegation(provider))
    with pytest.raises(ConfigurationError, match="MCP_TOKEN_EXCHANGE_URL must use https"):
        TokenExchange("http://as.example.com/token")
    with pytest.raises(RuntimeError, match="AsyncClient"), httpx.Client(
            auth=DelegatedAuth(app.delegation, None, "billing")) as http:
        http.get("http://127.0.0.1:1/")
