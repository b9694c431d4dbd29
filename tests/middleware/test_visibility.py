"""Caller-shaped listings: a definition declares who sees it (scopes or a predicate); lists show
each caller only what it may call, hidden ones are refused as unknown, list bytes are cached per
view, and list changes naming definitions reach only those whose view changed. Both eras."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import jwt
import orjson
import pytest

from mcpcore import Context, JsonRpcErrorCode, McpApp, McpError, Settings, prompt, resource, tool
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "modern"]
SECRET = "v" * 40


def bearer(scope: str, sub: str = "alice", tid: str = "acme") -> dict[str, str]:
    claims = {"sub": sub, "cid": "app", "tid": tid, "scope": scope, "exp": int(time.time()) + 300}
    return {"authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}


@tool
async def public_echo(text: str) -> str:
    """Echo for everyone."""
    return text


@tool(visible_to=["admin:read"])
async def admin_report() -> str:
    """The admins' report."""
    return "secret numbers"


@tool(visible_to=lambda ctx: ctx.tenant_id == "acme")
async def acme_only() -> str:
    """Only for the acme tenant."""
    return "acme"


@prompt(visible_to=["admin:read"])
def admin_prompt() -> str:
    """The admins' prompt."""
    return "admin"


@resource("admin://ledger", name="ledger", mime_type="text/plain", visible_to=["admin:read"])
def ledger() -> str:
    """The ledger."""
    return "ledger"


@resource("admin://rows/{id}", name="rows", mime_type="text/plain", visible_to=["admin:read"],
          complete={"id": lambda value, args: ["1", "2"]})
def rows(id: str) -> str:
    """A row."""
    return f"row {id}"


@resource("pub://doc", name="doc", mime_type="text/plain")
def doc() -> str:
    """A public document."""
    return "doc"


def gated_app() -> McpApp:
    return McpApp("gated", tools=[public_echo, admin_report, acme_only], prompts=[admin_prompt],
                  resources=[ledger, rows, doc],
                  settings=Settings.from_env({}, auth_mode="jwt", auth_secret_key=SECRET))


async def _lists(c: McpTestClient) -> dict[str, set[str]]:
    return {
        "tools": {t["name"] for t in await c.list_tools()},
        "prompts": {p["name"] for p in (await c.request("prompts/list"))["prompts"]},
        "resources": {r["uri"] for r in (await c.request("resources/list"))["resources"]},
        "templates": {t["uriTemplate"] for t in (await c.request("resources/templates/list"))["resourceTemplates"]},
    }


@pytest.mark.parametrize("era", ERAS)
async def test_a_caller_without_the_scope_never_sees_nor_calls_the_scoped_definitions(era: str) -> None:
    async with McpTestClient(gated_app(), era=era, headers=bearer("")) as c:
        seen = await _lists(c)
        assert seen == {"tools": {"public_echo", "acme_only"}, "prompts": set(), "resources": {"pub://doc"},
                        "templates": set()}
        with pytest.raises(McpError) as e:
            await c.call_tool("admin_report")
        assert e.value.code == JsonRpcErrorCode.InvalidParams and e.value.data["reason"] == "unknown_tool"
        assert e.value.message == "Unknown tool: admin_report"  # the same answer as for a tool that does not exist
        with pytest.raises(McpError) as e:
            await c.get_prompt("admin_prompt")
        assert e.value.data["reason"] == "unknown_prompt"
        for uri in ("admin://ledger", "admin://rows/1"):
            with pytest.raises(McpError) as e:
                await c.read_resource(uri)
            assert e.value.code in (JsonRpcErrorCode.InvalidParams, -32002)
        with pytest.raises(McpError):
            await c.request("completion/complete", {"ref": {"type": "ref/resource", "uri": "admin://rows/{id}"},
                                                    "argument": {"name": "id", "value": ""}})


@pytest.mark.parametrize("era", ERAS)
async def test_a_caller_with_the_scope_sees_and_calls_them(era: str) -> None:
    async with McpTestClient(gated_app(), era=era, headers=bearer("admin:read")) as c:
        seen = await _lists(c)
        assert seen["tools"] == {"public_echo", "admin_report", "acme_only"}
        assert seen["prompts"] == {"admin_prompt"} and seen["resources"] == {"admin://ledger", "pub://doc"}
        assert seen["templates"] == {"admin://rows/{id}"}
        assert (await c.call_tool("admin_report"))["content"][0]["text"] == "secret numbers"
        assert (await c.get_prompt("admin_prompt"))["messages"][0]["content"]["text"] == "admin"
        assert (await c.read_resource("admin://rows/7"))["contents"][0]["text"] == "row 7"


@pytest.mark.parametrize("era", ERAS)
async def test_a_predicate_decides_per_caller(era: str) -> None:
    async with McpTestClient(gated_app(), era=era, headers=bearer("", tid="globex")) as c:
        assert "acme_only" not in {t["name"] for t in await c.list_tools()}
        with pytest.raises(McpError):
            await c.call_tool("acme_only")


async def test_list_bytes_are_cached_once_per_distinct_view() -> None:
    app = gated_app()
    await app.startup()
    try:
        for _ in range(2):
            for scope in ("", "admin:read", "admin:read other"):
                async with McpTestClient(app, era="modern", headers=bearer(scope)) as c:
                    await c.list_tools()
        cached = [k for k in app.dispatcher.lists._bytes if k[1] == "tools/list"]
        assert len(cached) == 2  # two views among three callers, each served twice
        assert {k[3] for k in cached} == {("acme_only",), ("admin_report", "acme_only")}
    finally:
        await app.shutdown()


def test_visible_to_is_checked_when_defined() -> None:
    from mcpcore import ConfigurationError

    with pytest.raises(ConfigurationError):
        @tool(visible_to="admin")  # type: ignore[arg-type]
        async def wrong() -> str:
            """Wrong."""
            return ""

    with pytest.raises(ConfigurationError):
        @tool(visible_to=["has space"])
        async def wrong2() -> str:
            """Wrong."""
            return ""


async def test_a_failing_predicate_hides_the_definition() -> None:
    def broken(ctx: Context) -> bool:
        raise RuntimeError("predicate bug")

    @tool(visible_to=broken)
    async def fragile() -> str:
        """Fragile."""
        return "x"

    app = McpApp("f", tools=[fragile, public_echo], settings=Settings.from_env({}))
    async with McpTestClient(app, era="modern") as c:
        assert {t["name"] for t in await c.list_tools()} == {"public_echo"}


class Feed:
    """The JSON messages of an SSE response, read in the background (a timed-out wait loses none)."""

    def __init__(self, resp: Any) -> None:
        from mcpcore.testing.client import parse_sse

        self.resp = resp
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._pump(parse_sse(resp.aiter_lines())))

    async def _pump(self, events: Any) -> None:
        async for ev in events:
            if ev.get("data"):
                self.queue.put_nowait(orjson.loads(ev["data"]))

    async def next(self, timeout: float = 5) -> dict[str, Any] | None:
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            return None

    async def close(self) -> None:
        self.task.cancel()
        await self.resp.aclose()


async def _listen(c: McpTestClient, rid: str) -> Feed:
    params = c.envelope({"notifications": {"toolsListChanged": True}})
    body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params})
    req = c.http.build_request("POST", c.url, content=body, headers=c.headers("subscriptions/listen", params))
    feed = Feed(await c.http.send(req, stream=True))
    ack = await feed.next()
    assert ack is not None and ack["method"] == "notifications/subscriptions/acknowledged"
    return feed


async def test_a_named_list_change_reaches_only_those_whose_view_changed() -> None:
    app = gated_app()
    await app.startup()
    try:
        async with McpTestClient(app, era="modern", headers=bearer("admin:read")) as admin, \
                McpTestClient(app, era="modern", headers=bearer("")) as user:
            a = await _listen(admin, "la")
            u = await _listen(user, "lu")
            changed = "notifications/tools/list_changed"
            try:
                await app.notify.tools_changed(names=["admin_report"])
                assert (await a.next() or {}).get("method") == changed
                assert await u.next(0.3) is None  # its view has no admin_report
                await app.notify.tools_changed(names=["public_echo"])
                assert (await u.next() or {}).get("method") == changed
                assert (await a.next() or {}).get("method") == changed
                app.remove_tool("admin_report")  # the admin saw it: its view changed
                await app.notify.tools_changed(names=["admin_report"])
                assert (await a.next() or {}).get("method") == changed
                assert await u.next(0.3) is None
                await app.notify.tools_changed()  # no names: everyone is told
                assert (await u.next() or {}).get("method") == changed
            finally:
                await a.close()
                await u.close()
    finally:
        await app.shutdown()


async def test_a_named_list_change_on_a_2025_get_stream() -> None:
    app = gated_app()
    await app.startup()
    try:
        async with McpTestClient(app, headers=bearer("")) as user:
            h = user.headers()
            h["accept"] = "text/event-stream"
            h.pop("content-type")
            feed = Feed(await user.http.send(user.http.build_request("GET", user.url, headers=h), stream=True))
            try:
                await asyncio.sleep(0.1)  # the stream subscribes to the bus once it is open
                await app.notify.tools_changed(names=["admin_report"])
                await app.notify.tools_changed(names=["public_echo"])
                assert (await feed.next() or {}).get("method") == "notifications/tools/list_changed"
                assert await feed.next(0.3) is None  # only one of the two reached it
            finally:
                await feed.close()
    finally:
        await app.shutdown()


@tool
async def touch(uri: str, ctx: Context) -> str:
    """Tell subscribers that a resource changed."""
    ctx.notify_resource_updated(uri)
    return "touched"


def touching_app() -> McpApp:
    return McpApp("gated", tools=[public_echo, touch], resources=[ledger, rows, doc],
                  settings=Settings.from_env({}, auth_mode="jwt", auth_secret_key=SECRET))


HIDDEN = ["admin://ledger", "admin://rows/1"]


async def test_a_2025_subscription_to_a_hidden_resource_is_answered_as_an_unknown_one_and_never_delivered() -> None:
    app = touching_app()
    await app.startup()
    try:
        async with McpTestClient(app, headers=bearer("")) as user, \
                McpTestClient(app, headers=bearer("admin:read")) as admin:
            unknown = await user.request("resources/subscribe", {"uri": "nothing://here"})
            for uri in [*HIDDEN, "pub://doc"]:
                assert await user.request("resources/subscribe", {"uri": uri}) == unknown
                await admin.request("resources/subscribe", {"uri": uri})
            # on the request's own stream: the caller's handler touches a hidden resource
            for uri in HIDDEN:
                assert (await user.call_tool("touch", {"uri": uri}))["content"][0]["text"] == "touched"
            assert not [m for m in user.messages if m["method"] == "notifications/resources/updated"]
            await admin.call_tool("touch", {"uri": HIDDEN[0]})
            assert [m["params"]["uri"] for m in admin.messages] == [HIDDEN[0]]
            # on the GET stream: updates published by the app
            feeds = []
            for c in (user, admin):
                h = c.headers()
                h["accept"] = "text/event-stream"
                h.pop("content-type")
                feeds.append(Feed(await c.http.send(c.http.build_request("GET", c.url, headers=h), stream=True)))
            u, a = feeds
            try:
                await asyncio.sleep(0.1)  # the streams subscribe to the bus once open
                for uri in [*HIDDEN, "pub://doc"]:
                    await app.notify.resource_updated(uri)
                assert [(await a.next() or {}).get("params", {}).get("uri") for _ in range(3)] == [*HIDDEN, "pub://doc"]
                assert (await u.next() or {}).get("params") == {"uri": "pub://doc"}
                assert await u.next(0.3) is None
            finally:
                await u.close()
                await a.close()
    finally:
        await app.shutdown()


async def _listen_to(c: McpTestClient, rid: str, uris: list[str]) -> tuple[Feed, dict[str, Any]]:
    params = c.envelope({"notifications": {"resourceSubscriptions": uris}})
    body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params})
    req = c.http.build_request("POST", c.url, content=body, headers=c.headers("subscriptions/listen", params))
    feed = Feed(await c.http.send(req, stream=True))
    ack = await feed.next()
    assert ack is not None and ack["method"] == "notifications/subscriptions/acknowledged"
    return feed, ack["params"]["notifications"]


async def test_a_listen_filter_naming_a_hidden_resource_is_acknowledged_as_an_unknown_one_and_never_delivered() -> None:
    app = touching_app()
    await app.startup()
    try:
        async with McpTestClient(app, era="modern", headers=bearer("")) as user, \
                McpTestClient(app, era="modern", headers=bearer("admin:read")) as admin:
            asked = ["nothing://here", *HIDDEN, "pub://doc"]
            u, u_ack = await _listen_to(user, "lu", asked)
            a, a_ack = await _listen_to(admin, "la", asked)
            try:
                assert u_ack == a_ack == {"resourceSubscriptions": asked}  # hidden URIs echoed as unknown ones are
                for uri in HIDDEN:
                    await user.call_tool("touch", {"uri": uri})  # a handler of the caller's own request
                    await app.notify.resource_updated(uri)
                await app.notify.resource_updated("pub://doc")
                got = [(await a.next() or {}).get("params", {}).get("uri") for _ in range(5)]
                assert got == [HIDDEN[0], HIDDEN[0], HIDDEN[1], HIDDEN[1], "pub://doc"]
                assert (await u.next() or {}).get("params", {}).get("uri") == "pub://doc"
                assert await u.next(0.3) is None
            finally:
                await u.close()
                await a.close()
    finally:
        await app.shutdown()
