"""What a mounted child keeps through the parent: its middleware, visibility and scopes,
dependencies, tasks, Apps, and its notifications, renamed, in both eras."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from mcpcore import Call, CallNext, Context, Depends, McpApp, McpError, Middleware, Settings, resource, tool
from mcpcore.extensions import APP_MIME_TYPE, APPS, App
from mcpcore.testing import McpTestClient
from tests.auth.test_http_auth import SECRET, bearer, token
from tests.servers import run_server

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


class Seen(Middleware):
    """The child's layer: records what it sees and stamps the results it passes."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, bool]] = []

    async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
        self.seen.append((call.method, call.name, call.definition is not None))
        result = await call_next(call)
        result.setdefault("_meta", {})["seen-by"] = "child"
        return result

    async def on_list_tools(self, call: Call, call_next: CallNext) -> Any:
        result = await call_next(call)
        self.seen.append((call.method, ",".join(sorted(t["name"] for t in result["tools"])), True))
        result["tools"] = [t for t in result["tools"] if t["name"] != "internal"]
        return result


class Name(BaseModel):
    name: str


def dep_value() -> str:
    return "from-dependency"


def child_app(layer: Seen | None = None) -> McpApp:
    @tool
    def echo(text: str, dep: Annotated[str, Depends(dep_value)]) -> str:
        """Echo with a dependency."""
        return f"{text}/{dep}"

    @tool
    def internal() -> str:
        """Hidden from lists by the child's middleware."""
        return "internal"

    @tool(visible_to=["billing:admin"])
    def refund() -> str:
        """Admins only."""
        return "refunded"

    @tool(task="required")
    async def report(rows: int) -> str:
        """A long report."""
        await asyncio.sleep(0.01)
        return f"{rows} rows"

    @tool(app=App(html="<p>chart</p>"))
    def chart() -> dict[str, Any]:
        """A chart."""
        return {"points": [1, 2]}

    @tool
    def touch(ctx: Context) -> str:
        """Changes a resource and the tool list."""
        ctx.notify_resource_updated("data://watched")
        ctx.notify_tool_list_changed(["echo"])
        return "touched"

    @tool
    async def interview(ctx: Context) -> str:
        """Reports progress, logs, and asks the caller its name."""
        await ctx.report_progress(1, 2)
        ctx.log.info("asking")
        answer = await ctx.elicit("Your name?", Name)
        await ctx.report_progress(2, 2)
        return f"hello {answer.data.name if answer.data else 'nobody'}"

    @resource("data://watched", mime_type="text/plain")
    def watched() -> str:
        """Watched."""
        return "w"

    return McpApp("billing", settings=Settings.from_env({}),
                  tools=[echo, internal, refund, report, chart, touch, interview],
                  resources=[watched], middleware=[layer] if layer else [])


def parent_app(child: McpApp, **settings: Any) -> McpApp:
    app = McpApp("parent", settings=Settings.from_env({}, **settings))
    app.mount(child, namespace="billing")
    return app


@pytest.mark.parametrize("era", ERAS)
async def test_child_middleware_sees_its_own_names_and_dependencies_resolve(era: str) -> None:
    layer = Seen()
    app = parent_app(child_app(layer))
    async with McpTestClient(app, era=era) as c:
        names = {t["name"] for t in await c.list_tools()}
        assert "billing_echo" in names and "billing_internal" not in names  # the child's list hook ran
        assert ("tools/list", "chart,echo,internal,interview,refund,report,touch", True) in layer.seen  # in its names
        r = await c.call_tool("billing_echo", {"text": "hi"})
        assert r["content"][0]["text"] == "hi/from-dependency" and r["_meta"]["seen-by"] == "child"
        assert ("tools/call", "echo", True) in layer.seen  # its name, its registry's definition
        schema = {t["name"]: t for t in await c.list_tools()}["billing_echo"]["inputSchema"]
        assert set(schema["properties"]) == {"text"}


@pytest.mark.parametrize("era", ERAS)
async def test_visibility_and_scopes_hold_through_the_parent(era: str) -> None:
    app = parent_app(child_app(), auth_mode="jwt", auth_secret_key=SECRET)
    async with McpTestClient(app, era=era, headers=bearer(token())) as c:
        assert "billing_refund" not in {t["name"] for t in await c.list_tools()}
        with pytest.raises(McpError) as e:
            await c.call_tool("billing_refund")
        assert (e.value.data or {}).get("reason") == "unknown_tool"
    async with McpTestClient(app, era=era, headers=bearer(token(scope="billing:admin"))) as c:
        assert "billing_refund" in {t["name"] for t in await c.list_tools()}
        assert (await c.call_tool("billing_refund"))["content"][0]["text"] == "refunded"


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_a_child_task_tool_runs_as_a_task_of_the_parent(kind: str, request: pytest.FixtureRequest) -> None:
    app = parent_app(child_app(), **stores(kind, request))
    async with McpTestClient(app, era="modern", capabilities=TASKS) as c:
        created = await c.call_tool("billing_report", {"rows": 3})
        assert created["resultType"] == "task"
        deadline = time.monotonic() + 5
        while (task := await c.request("tasks/get", {"taskId": created["taskId"]}))["status"] == "working":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        assert task["status"] == "completed" and task["result"]["content"][0]["text"] == "3 rows"


@pytest.mark.parametrize("with_layer", [False, True])
@pytest.mark.parametrize("era", ERAS)
async def test_a_child_app_view_is_renamed_under_the_namespace_and_read_through_the_parent(
        era: str, with_layer: bool) -> None:
    app = parent_app(child_app(Seen() if with_layer else None))
    caps = {"extensions": {APPS: {"mimeTypes": [APP_MIME_TYPE]}}}
    async with McpTestClient(app, era=era, capabilities=caps) as c:
        chart = {t["name"]: t for t in await c.list_tools()}["billing_chart"]
        uri = chart["_meta"]["ui"]["resourceUri"]
        assert uri == chart["_meta"]["ui/resourceUri"] == "ui://billing/chart/view.html"
        listed = {r["uri"] for r in await c.list_resources()}
        assert uri in listed and "ui://chart/view.html" not in listed
        (item,) = (await c.read_resource(uri))["contents"]
        assert item == {**item, "uri": uri, "text": "<p>chart</p>", "mimeType": APP_MIME_TYPE}
        with pytest.raises(McpError):  # the child's own URI is not the parent's
            await c.read_resource("ui://chart/view.html")
        assert (await c.call_tool("billing_chart"))["structuredContent"] == {"points": [1, 2]}


@pytest.mark.parametrize("era", ERAS)
async def test_a_shared_view_and_a_view_served_as_a_resource_are_renamed_once(era: str) -> None:
    shared = App(html="<p>shared</p>", uri="ui://board/view.html")

    @tool(app=shared)
    def left() -> str:
        """One tool of the shared view."""
        return "l"

    @tool(app=shared)
    def right() -> str:
        """The other."""
        return "r"

    @tool(app=App(uri="ui://own/page.html"))
    def own() -> str:
        """A view the child serves as its own resource."""
        return "o"

    @resource("ui://own/page.html", mime_type=APP_MIME_TYPE)
    def page() -> str:
        """The page."""
        return "<p>own</p>"

    child = McpApp("views", settings=Settings.from_env({}), tools=[left, right, own], resources=[page])
    app = parent_app(child)
    async with McpTestClient(app, era=era) as c:
        metas = {t["name"]: t["_meta"]["ui"]["resourceUri"] for t in await c.list_tools()}
        assert metas == {"billing_left": "ui://billing/board/view.html", "billing_right": "ui://billing/board/view.html",
                         "billing_own": "ui://billing/own/page.html"}
        for uri, text in (("ui://billing/board/view.html", "<p>shared</p>"), ("ui://billing/own/page.html",
                                                                              "<p>own</p>")):
            assert (await c.read_resource(uri))["contents"][0]["text"] == text
    assert [d.uri for d in child.registry.views()] == ["ui://board/view.html"]  # the child serves its own names


def stores(kind: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    if kind == "memory":
        return {}
    return {"session_store": "redis", "storage_provider": "redis", "redis_url": request.getfixturevalue("redis_url")}


@pytest.mark.parametrize("kind", ["memory", "redis"])
@pytest.mark.parametrize("era", ERAS)
async def test_the_childs_notifications_reach_the_parents_clients_renamed(era: str, kind: str,
                                                                         request: pytest.FixtureRequest) -> None:
    child = child_app()
    app = parent_app(child, **stores(kind, request))
    await app.startup()
    try:
        async with McpTestClient(app, era=era) as watcher, McpTestClient(app, era=era) as actor, \
                watcher.listen(tools_list_changed=True, resource_subscriptions=["data://billing/watched"]) as sub:
            await actor.call_tool("billing_touch")  # ctx.notify_* inside a mounted handler
            got = [await sub.next(5), await sub.next(5)]
            methods = sorted(n["method"] for n in got)
            assert methods == ["notifications/resources/updated", "notifications/tools/list_changed"]
            update = next(n for n in got if n["method"].endswith("updated"))
            assert update["params"]["uri"] == "data://billing/watched"
            await child.notify.resource_updated("data://watched")  # the child's app.notify
            note = await sub.next(5)
            assert note["method"] == "notifications/resources/updated"
            assert note["params"]["uri"] == "data://billing/watched"
    finally:
        await app.shutdown()


@pytest.mark.parametrize("era", ERAS)
async def test_progress_logs_and_questions_of_a_mounted_handler_reach_the_caller(era: str) -> None:
    app = parent_app(child_app())
    handlers = {"elicitation/create": lambda p: {"action": "accept", "content": {"name": "Ada"}}}
    async with McpTestClient(app, era=era, capabilities={"elicitation": {}}, handlers=handlers,
                             log_level="info") as c:
        c.answers_input_required = True
        seen: list[Any] = []
        r = await c.call_tool("billing_interview", {}, on_progress=lambda p, t, m: seen.append(p))
        assert r["content"][0]["text"] == "hello Ada", r
        assert 2 in seen  # the last attempt's progress (2026-07-28 runs the handler again after the answer)
        assert any(m.get("method") == "notifications/message" for m in c.messages), c.messages


@pytest.mark.parametrize("backend_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_proxied_backends_app_view_is_renamed_like_a_childs(era: str, backend_era: str) -> None:
    from mcpcore.client.asgi import StreamingASGITransport
    from mcpcore.compose import proxy

    backend = child_app()
    await backend.startup()
    try:
        app = McpApp("gateway", settings=Settings.from_env({}))
        app.mount(proxy("http://backend.test/mcp", era=backend_era, transport=StreamingASGITransport(backend)),
                  namespace="far")
        async with McpTestClient(app, era=era) as c:
            chart = {t["name"]: t for t in await c.list_tools()}["far_chart"]
            assert chart["_meta"]["ui"]["resourceUri"] == chart["_meta"]["ui/resourceUri"] == "ui://far/chart/view.html"
            (item,) = (await c.read_resource("ui://far/chart/view.html"))["contents"]
            assert item["uri"] == "ui://far/chart/view.html" and item["text"] == "<p>chart</p>"
    finally:
        await backend.shutdown()


@pytest.mark.parametrize("era", ERAS)
async def test_a_cancelled_call_to_a_mounted_tool_is_seen_by_the_childs_handler(era: str) -> None:
    """2025: ``notifications/cancelled``; 2026-07-28: the caller closes its request (a real server)."""
    with run_server("tests.compose.mount_cancel_app:app") as url:
        async with McpTestClient(url=url, era=era) as c:
            call = asyncio.ensure_future(c.request("tools/call", {"name": "kid_wait_for_cancel", "arguments": {}},
                                                   request_id="cancel-me"))
            await asyncio.sleep(0.7)  # the call runs in the child's handler
            if era == "legacy":
                await c.notify("notifications/cancelled", {"requestId": "cancel-me", "reason": "changed my mind"})
                await asyncio.sleep(0.2)
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, McpError):
                await call
        async with McpTestClient(url=url, era="modern") as direct:
            deadline = time.monotonic() + 5
            while (await direct.call_tool("kid_cancellations"))["structuredContent"] != 1:
                assert time.monotonic() < deadline, "the child's handler never saw the cancellation"
                await asyncio.sleep(0.1)
