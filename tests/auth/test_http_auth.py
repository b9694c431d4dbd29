"""Auth on the request path: 401 challenges, protected-resource metadata, scopes answered 403,
tenants from tokens, identity-bound sessions (memory and Redis), and the official client."""

from __future__ import annotations

import secrets
import time
from typing import Any

import httpx
import jwt
import pytest

from mcpcore import Context, McpApp, McpError, Settings, tool
from mcpcore.testing import McpTestClient, tool_error
from tests.conftest import example_app

pytestmark = pytest.mark.anyio
SECRET = "s" * 40


def token(sub: str = "alice", client: str = "app-1", tid: str | None = "acme", scope: str = "", **extra: Any) -> str:
    claims: dict[str, Any] = {"sub": sub, "cid": client, "exp": int(time.time()) + 300, "scope": scope, **extra}
    if tid is not None:
        claims["tid"] = tid
    return jwt.encode(claims, SECRET, algorithm="HS256")


def bearer(t: str) -> dict[str, str]:
    return {"authorization": f"Bearer {t}"}


def jwt_app(**settings: Any) -> McpApp:
    return example_app(auth_mode="jwt", auth_secret_key=settings.pop("secret", SECRET), **settings)


async def test_no_token_is_401_with_a_metadata_challenge_and_prm_is_public() -> None:
    app = jwt_app()
    async with McpTestClient(app, initialize=False) as c:
        r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and r.json()["error"]["code"] == -32006
        challenge = r.headers["www-authenticate"]
        assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge
        prm_url = challenge.split('resource_metadata="')[1].split('"')[0]
        for url in (prm_url, "http://127.0.0.1:8000/.well-known/oauth-protected-resource"):
            r = await c.http.get(url)
            assert r.status_code == 200 and r.headers["cache-control"] == "public, max-age=3600"
            assert r.json()["resource"].endswith("/mcp") and "catalog:admin" in r.json()["scopes_supported"]
        assert (await c.http.get("http://127.0.0.1:8000/healthz")).status_code == 200
        r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {**c.headers(), **bearer("garbage")})
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]


async def test_a_browser_client_on_an_allowed_origin_reads_the_metadata() -> None:
    prm = "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"
    origin = {"origin": "https://chat.example"}
    async with McpTestClient(jwt_app(cors_allowed_origins=("https://chat.example",)), initialize=False) as c:
        r = await c.http.options(prm, headers={**origin, "access-control-request-method": "GET"})
        assert r.status_code == 204 and r.headers["access-control-allow-origin"] == "https://chat.example"
        assert r.headers["access-control-allow-methods"] == "GET, HEAD, OPTIONS"
        r = await c.http.get(prm, headers=origin)
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://chat.example"
        r = await c.http.get(prm, headers={"origin": "https://evil.example"})
        assert r.status_code == 403 and "access-control-allow-origin" not in r.headers
        r = await c.http.get("http://127.0.0.1:8000/healthz", headers=origin)  # a probe: allowed, no grant
        assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


async def test_metadata_is_absent_without_auth() -> None:
    async with McpTestClient(example_app(), initialize=False) as c:
        assert (await c.http.get("http://127.0.0.1:8000/.well-known/oauth-protected-resource")).status_code == 404


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_scope_protected_tool_is_403_without_naming_the_scope(era: str) -> None:
    app = jwt_app()
    async with McpTestClient(app, era=era, headers=bearer(token(scope="catalog:read"))) as c:
        with pytest.raises(McpError) as e:
            await c.call_tool("catalog_stats")
        assert e.value.http_status == 403 and e.value.code == -32005  # type: ignore[attr-defined]
        assert e.value.message == "Insufficient permissions." and "catalog:admin" not in str(e.value.data)
    async with McpTestClient(app, era=era, headers=bearer(token(scope="catalog:read catalog:admin"))) as c:
        r = await c.call_tool("catalog_stats")
        assert r["structuredContent"] == {"items": 5, "caller": "app-1"}


async def test_identity_and_tenant_reach_the_context_and_state_fails_closed_without_tid() -> None:
    seen: dict[str, Any] = {}

    @tool
    async def remember(value: str, ctx: Context) -> str:
        """Store and read back a value under one key."""
        seen.update(auth=ctx.auth, tenant=ctx.tenant_id)
        await ctx.state.set("k", value)
        return str(await ctx.state.get("k"))

    app = McpApp("t", "1", tools=[remember], settings=Settings.from_env({}, auth_mode="jwt",
                                                                        auth_secret_key=SECRET))
    async with McpTestClient(app, headers=bearer(token(tid="acme"))) as acme, \
            McpTestClient(app, headers=bearer(token(sub="bob", tid="globex"))) as globex:
        assert (await acme.call_tool("remember", {"value": "A"}))["structuredContent"] == {"result": "A"}
        assert seen["tenant"] == "acme" and seen["auth"].client_id == "app-1" and seen["auth"].subject == "alice"
        assert (await globex.call_tool("remember", {"value": "G"}))["structuredContent"] == {"result": "G"}
        assert (await app.services.state.get("acme", "k")) == "A"  # type: ignore[union-attr]
        assert (await app.services.state.get("globex", "k")) == "G"  # type: ignore[union-attr]
    async with McpTestClient(app, headers=bearer(token(tid=None))) as c:
        r = await c.call_tool("remember", {"value": "x"})
        assert r["isError"] and tool_error(r)["code"] == -32600
        assert seen["tenant"] is None


async def _hijack(app: McpApp) -> None:
    async with McpTestClient(app, headers=bearer(token(sub="alice"))) as owner:
        thief = {**owner.headers(), **bearer(token(sub="mallory"))}
        r = await owner.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, thief)
        assert r.status_code == 404
        other_tenant = {**owner.headers(), **bearer(token(sub="alice", tid="globex"))}
        assert (await owner.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, other_tenant)).status_code == 404
        r = await owner.http.delete(owner.url, headers=thief)
        assert r.status_code == 404
        assert await owner.list_tools()  # the owner's session survived both attempts
        r = await owner.http.get(owner.url, headers={**thief, "accept": "text/event-stream"})
        assert r.status_code == 404


async def test_session_hijack_is_404_on_the_memory_store() -> None:
    await _hijack(jwt_app())


async def test_session_hijack_is_404_on_the_redis_store(redis_url: str) -> None:
    app = jwt_app(session_store="redis", redis_url=redis_url)
    try:
        await _hijack(app)
    finally:
        await app.shutdown()


async def test_official_client_with_a_bearer_token_against_oauth(issuer: Any) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from tests.auth.issuer import AUDIENCE
    from tests.servers import run_server

    env = {"MCP_AUTH_MODE": "oauth", "OAUTH_ISSUER_URL": issuer.url, "OAUTH_AUDIENCE": AUDIENCE,
           "MCP_LOG_LEVEL": "warning"}
    with run_server(env=env) as url:
        good = issuer.mint(scope="catalog:admin", cid=None, client_id="desk")
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {good}"}) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            r = await client.call_tool("catalog_stats", {})
            assert r.structured_content == {"items": 5, "caller": "desk"}
        weak = issuer.mint(scope="catalog:read", cid=None, client_id="desk")
        async with httpx.AsyncClient() as http:
            h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                 "authorization": f"Bearer {weak}", "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                 "mcp-name": "catalog_stats"}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}, "name": "catalog_stats"}}
            r = await http.post(url, json=body, headers=h)
            assert r.status_code == 403 and r.json()["error"]["message"] == "Insufficient permissions."


async def _open(app: McpApp, sub: str) -> httpx.Response:
    async with McpTestClient(app, headers=bearer(token(sub=sub)), initialize=False) as c:
        return await c.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})


async def test_sessions_per_identity_are_capped_on_the_redis_store(redis_url: str) -> None:
    """Two sessions each; a third for the same identity is refused while the first two are in
    use (they are evicted only after a minute idle: another instance may be serving them)."""
    app = jwt_app(session_store="redis", redis_url=redis_url, max_sessions_per_identity=2)
    carol, dave = f"carol-{secrets.token_hex(4)}", f"dave-{secrets.token_hex(4)}"  # a shared REDIS_URL keeps keys
    await app.startup()
    try:
        first = await _open(app, carol)
        assert first.status_code == 200
        assert (await _open(app, carol)).status_code == 200
        refused = await _open(app, carol)
        assert refused.status_code == 503
        assert refused.json()["error"]["data"]["reason"] == "session_capacity"
        assert (await _open(app, dave)).status_code == 200  # another identity is not affected
        sid = first.headers["mcp-session-id"]
        r = await app.redis.delete(app.sessions._key(sid))  # ended elsewhere: its index entry is stale
        assert r == 1
        assert (await _open(app, carol)).status_code == 200
    finally:
        await app.shutdown()


async def test_sessions_per_identity_are_capped_on_the_memory_store() -> None:
    """In one process the store knows which sessions are idle: the least recently used makes room."""
    app = jwt_app(max_sessions_per_identity=2)
    await app.startup()
    try:
        ids = [(await _open(app, "erin")).headers["mcp-session-id"] for _ in range(3)]
        assert await app.sessions.get(ids[0]) is None
        assert await app.sessions.get(ids[1]) is not None and await app.sessions.get(ids[2]) is not None
        assert (await _open(app, "frank")).status_code == 200
    finally:
        await app.shutdown()


async def test_sessions_per_identity_make_room_by_last_use_on_the_memory_store() -> None:
    """The session an identity used least recently makes room, not its oldest: a session opened
    first and used since stays."""
    app = jwt_app(max_sessions_per_identity=2)
    await app.startup()
    try:
        ids = [(await _open(app, "grace")).headers["mcp-session-id"] for _ in range(2)]
        assert await app.sessions.get(ids[0]) is not None  # used after the second was opened
        third = (await _open(app, "grace")).headers["mcp-session-id"]
        assert await app.sessions.get(ids[1]) is None
        assert await app.sessions.get(ids[0]) is not None and await app.sessions.get(third) is not None
    finally:
        await app.shutdown()
