"""Host identity: the user a FastAPI host app authenticated (API keys through Starlette's
AuthenticationMiddleware) is the caller, in process and under uvicorn: tenants, scopes,
visibility, 2025 sessions, tasks and rate limits follow that user; an unauthenticated request
is 401 as in the token modes; it composes with the token modes."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
import jwt
import pytest

from mcpcore import Context, McpApp, McpError, Settings, tool
from mcpcore.auth import AuthError, Caller, HostIdentity
from mcpcore.middleware import RateLimit
from mcpcore.testing import McpTestClient
from tests.apps.host_fastapi import build
from tests.servers import serve

pytestmark = pytest.mark.anyio
URL = "http://127.0.0.1:8000/mcp/"
ALICE, BOB = {"x-api-key": "key-alice"}, {"x-api-key": "key-bob"}
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
SECRET = "h" * 40


def text(result: dict[str, Any]) -> Any:
    return result["content"][0]["text"] if result["content"] else None


async def two_users(app: Any, era: str, url: str = URL) -> None:
    """What every host-identity setup must hold for alice (acme, reports:admin) and bob (globex)."""
    async with McpTestClient(app, url=url, era=era, headers=ALICE, capabilities=TASKS) as a, \
            McpTestClient(app, url=url, era=era, headers=BOB, capabilities=TASKS) as b:
        me_a = (await a.call_tool("whoami"))["structuredContent"]
        me_b = (await b.call_tool("whoami"))["structuredContent"]
        assert me_a == {"subject": "alice", "tenant": "acme", "scopes": ["notes:write", "reports:admin"],
                        "client": "host", "host_user": "alice"}
        assert me_b["subject"] == "bob" and me_b["tenant"] == "globex" and me_b["host_user"] == "bob"
        # each tenant's state is its own
        await a.call_tool("note_put", {"text": f"alice {era}"})
        assert text(await a.call_tool("note_get")) == f"alice {era}"
        assert text(await b.call_tool("note_get")) is None
        # the scope-gated tool: listed and served for alice, hidden and refused for bob
        assert "admin_report" in [t["name"] for t in await a.list_tools()]
        assert "admin_report" not in [t["name"] for t in await b.list_tools()]
        assert text(await a.call_tool("admin_report")) == "report for acme"
        with pytest.raises(McpError) as unknown:
            await b.call_tool("admin_report")
        assert unknown.value.code == -32602
        with pytest.raises(McpError) as forbidden:
            await b.call_tool("admin_count")
        assert forbidden.value.code == -32005 and forbidden.value.http_status == 403  # type: ignore[attr-defined]
        # a task is its creator's
        if era == "modern":
            task_id = (await a.call_tool("slow_echo", {"text": "hi", "seconds": 5}))["taskId"]
        else:
            task_id = (await a.call_tool("slow_echo", {"text": "hi", "seconds": 5}, task={"ttl": 60000}))[
                "task"]["taskId"]
        with pytest.raises(McpError) as other:
            await b.request("tasks/get", {"taskId": task_id})
        assert other.value.code == -32602
        assert (await a.request("tasks/get", {"taskId": task_id}))["status"] == "working"
        await a.request("tasks/cancel", {"taskId": task_id})
        if era == "legacy":  # a 2025 session is its user's: bob presenting alice's session is a 404
            r = await b.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
                             {**b.headers(), "mcp-session-id": a.session_id or ""})
            assert r.status_code == 404
        # no user: the token modes' 401 (no metadata to name: there is no token to get)
        r = await a.post({"jsonrpc": "2.0", "id": 10, "method": "tools/list"},
                         {k: v for k, v in a.headers().items() if k != "x-api-key"})
        assert r.status_code == 401 and r.json()["error"]["code"] == -32006
        assert r.headers["www-authenticate"] == 'Bearer realm="mcp"'


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_host_apps_user_is_the_caller_in_process(era: str) -> None:
    api, _ = build(Settings.from_env({}))
    async with api.router.lifespan_context(api):
        await two_users(api, era)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(api), base_url="http://127.0.0.1:8000") as http:
            assert (await http.get("/me", headers=ALICE)).json() == {"user": "alice", "tenant": "acme"}
            assert (await http.get("/me")).status_code == 401  # the host's own Depends(current_user)
            bad = await http.post("/mcp/", headers={"x-api-key": "nope"}, json={})
            assert bad.status_code == 400 and bad.text == "unknown API key"  # the host's middleware answered


def test_the_host_apps_user_is_the_caller_under_uvicorn(redis_url: str) -> None:
    env = {"MCP_SESSION_STORE": "redis", "REDIS_URL": redis_url, "STORAGE_PROVIDER_TYPE": "redis",
           "MCP_LOG_LEVEL": "warning"}
    with serve("tests.apps.host_fastapi:app", env, health_path="/mcp/healthz") as (base, _):
        for era in ("legacy", "modern"):
            asyncio.run(two_users(None, era, f"{base}/mcp/"))
        assert httpx.get(f"{base}/me", headers=BOB).json() == {"user": "bob", "tenant": "globex"}


async def test_it_composes_with_a_token_mode() -> None:
    api, mcp = build(Settings.from_env({"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SECRET}))
    assert mcp.settings.auth_mode == "jwt"
    token = jwt.encode({"sub": "carol", "cid": "cli", "tid": "initech", "exp": int(time.time()) + 60}, SECRET)
    async with api.router.lifespan_context(api):
        async with McpTestClient(api, url=URL, era="modern", headers=ALICE) as c:
            assert (await c.call_tool("whoami"))["structuredContent"]["subject"] == "alice"
        async with McpTestClient(api, url=URL, era="modern", headers={"authorization": f"Bearer {token}"}) as c:
            me = (await c.call_tool("whoami"))["structuredContent"]
            assert (me["subject"], me["tenant"], me["client"]) == ("carol", "initech", "cli")
            r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             {**c.headers(), "authorization": "Bearer nonsense"})
            assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]
            r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             {k: v for k, v in c.headers().items() if k != "authorization"})
            assert r.status_code == 401 and "resource_metadata=" in r.headers["www-authenticate"]
            prm = await c.http.get("http://127.0.0.1:8000/mcp/.well-known/oauth-protected-resource")
            assert prm.status_code == 200


async def test_a_function_of_the_scope_state_names_the_caller_sync_or_async() -> None:
    def from_state(scope: Any) -> Caller | None:
        user = scope.get("state", {}).get("user")  # what the host's middleware put on request.state
        if user is None:
            return None
        name, org = user.split("@")
        return Caller(name, tenant_id=org, scopes=["reports:admin"], claims={"plan": "gold"})

    async def from_state_async(scope: Any) -> Caller | None:
        await asyncio.sleep(0)
        return from_state(scope)

    @tool
    async def plan(ctx: Context) -> str:
        """The caller's plan."""
        assert ctx.auth is not None
        return f"{ctx.auth.subject}@{ctx.tenant_id}: {ctx.auth.claims['plan']}"

    for identify in (from_state, from_state_async):
        inner = McpApp("state", tools=[plan], auth=HostIdentity(identify), settings=Settings.from_env({}))

        async def gateway(scope: Any, receive: Any, send: Any, inner: McpApp = inner) -> None:
            user = dict(scope["headers"]).get(b"x-user")
            if user is not None:
                scope.setdefault("state", {})["user"] = user.decode()
            await inner(scope, receive, send)

        await inner.startup()
        try:
            async with McpTestClient(gateway, era="modern", headers={"x-user": "dana@umbrella"}) as c:
                assert text(await c.call_tool("plan")) == "dana@umbrella: gold"
            async with McpTestClient(gateway, era="modern") as c:
                r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, c.headers())
                assert r.status_code == 401
        finally:
            await inner.shutdown()


async def test_identify_answers_and_failures(caplog: pytest.LogCaptureFixture) -> None:
    def refuse(scope: Any) -> Caller:
        raise AuthError(403, "invalid_token", "This user may not use MCP.", reason="host")

    def broken(scope: Any) -> Caller:
        raise RuntimeError("database down")

    def wrong(scope: Any) -> Any:
        return {"sub": "x"}

    def bad_tenant(scope: Any) -> Caller:
        return Caller("eve", tenant_id="../etc")

    expected = {refuse: 403, broken: 503, wrong: 503, bad_tenant: 503}
    for identify, status in expected.items():
        app = McpApp("t", auth=HostIdentity(identify), settings=Settings.from_env({}))
        with caplog.at_level(logging.WARNING, logger="mcpcore.auth"):
            async with McpTestClient(app, era="modern") as c:
                r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, c.headers())
        assert r.status_code == status, identify
    assert "identify returned dict" in caplog.text and "'../etc' is not valid" in caplog.text


async def test_rate_limits_count_per_host_user() -> None:
    api, mcp = build(Settings.from_env({}))
    mcp.add_middleware(RateLimit(2, per=60))
    async with api.router.lifespan_context(api), \
            McpTestClient(api, url=URL, era="modern", headers=ALICE) as a, \
            McpTestClient(api, url=URL, era="modern", headers=BOB) as b:
        for _ in range(2):
            assert not (await a.call_tool("whoami")).get("isError")
        limited = await a.call_tool("whoami")
        assert limited["isError"] and limited["_meta"]["dev.mcpcore/error"]["code"] == -32003
        assert (await b.call_tool("whoami"))["structuredContent"]["subject"] == "bob"


async def test_settings_form_and_what_the_app_says() -> None:
    from starlette.authentication import AuthCredentials, SimpleUser

    from tests.apps.host_fastapi import TOOLS

    env = {"MCP_AUTH_HOST_IDENTITY": "true", "MCP_AUTH_HOST_TENANT": "shared"}
    mcp = McpApp("env", tools=TOOLS, settings=Settings.from_env(env))
    assert mcp.settings.auth_mode == "host"
    assert next(layer for layer in mcp.layers if layer.name == "auth").where.endswith("HostIdentity")
    assert not any("oauth-protected-resource" in p for p in mcp.side_routes())

    async def host(scope: Any, receive: Any, send: Any) -> None:  # a user without a tenant of its own
        scope["user"], scope["auth"] = SimpleUser("frank"), AuthCredentials(["notes:write"])
        await mcp(scope, receive, send)

    await mcp.startup()
    try:
        async with McpTestClient(host, era="modern") as c:
            me = (await c.call_tool("whoami"))["structuredContent"]
            assert (me["subject"], me["tenant"], me["scopes"]) == ("frank", "shared", ["notes:write"])
    finally:
        await mcp.shutdown()
    with pytest.raises(Exception, match="MCP_AUTH_HOST_TENANT"):
        McpApp("t", settings=Settings.from_env({**env, "MCP_AUTH_HOST_TENANT": "a b"}))
    with pytest.raises(ValueError, match="tenant"):
        HostIdentity(tenant="../x")


def test_a_users_identity_is_built_once_and_follows_its_scopes() -> None:
    from starlette.authentication import AuthCredentials

    from tests.apps.host_fastapi import User

    host = HostIdentity(tenant="fallback")
    assert host.identify_now is not None
    first = host.identify_now({"user": User("ada", "acme"), "auth": AuthCredentials(["a"])})
    again = host.identify_now({"user": User("ada", "acme"), "auth": AuthCredentials(["a"])})
    assert first is again and first is not None and (first.subject, first.tenant_id, first.scopes) == (
        "ada", "acme", ("a",))
    wider = host.identify_now({"user": User("ada", "acme"), "auth": AuthCredentials(["a", "b"])})
    assert wider is not None and wider.scopes == ("a", "b")
    moved = host.identify_now({"user": User("ada", "globex"), "auth": AuthCredentials(["a"])})
    assert moved is not None and moved.tenant_id == "globex"
    from starlette.authentication import SimpleUser, UnauthenticatedUser

    plain = host.identify_now({"user": SimpleUser("bo"), "auth": AuthCredentials()})
    assert plain is not None and (plain.subject, plain.tenant_id, plain.scopes) == ("bo", "fallback", ())
    assert host.identify_now({"user": UnauthenticatedUser(), "auth": AuthCredentials()}) is None
    assert host.identify_now({}) is None


async def test_the_door_passes_a_known_simple_user_in_one_call() -> None:
    from starlette.authentication import AuthCredentials

    from mcpcore.transports.http.door import Authentication
    from tests.apps.host_fastapi import User

    host = HostIdentity()
    assert "door_shortcut" in Authentication(host, Settings.from_env({})).door.__qualname__
    fell_back: list[str] = []
    door = host.door_shortcut(lambda headers, send: fell_back.append(headers.scope["user"].username))

    class Headers:
        def __init__(self, user: Any, scopes: list[str]) -> None:
            self.scope = {"user": user, "auth": AuthCredentials(scopes), "method": "POST", "headers": []}
            self.auth: Any = None

    def through(headers: Headers) -> Any:
        door(headers, None)
        return headers.auth

    assert through(Headers(User("ada", "acme"), ["a"])) is None and fell_back == ["ada"]  # not seen yet
    host.identify_now({"user": User("ada", "acme"), "auth": AuthCredentials(["a"])})  # the layer's own door
    known = through(Headers(User("ada", "acme"), ["a"]))
    assert known is not None and (known.subject, known.tenant_id, known.scopes) == ("ada", "acme", ("a",))
    assert fell_back == ["ada"]
    for changed in (Headers(User("ada", "globex"), ["a"]), Headers(User("ada", "acme"), ["a", "b"]),
                    Headers(User("eve", "acme"), ["a"])):
        assert through(changed) is None  # another tenant, other scopes, another user: not the known identity
    assert fell_back == ["ada", "ada", "ada", "eve"]
