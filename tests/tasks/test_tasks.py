"""Tasks in one process (memory stores): identity binding, bounds, TTL, the era rules, gating,
notifications on subscriptions/listen and on a 2025 session's GET stream, and how tasks end."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest
from pydantic import BaseModel, Field

from mcpcore import Context, McpApp, McpError, Settings, TaskSupport, input_required, tool
from mcpcore.testing import McpTestClient, parse_sse
from tests.auth.test_http_auth import SECRET, bearer, token

pytestmark = pytest.mark.anyio

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
TERMINAL = ("completed", "failed", "cancelled")


@tool(task="optional")
async def work(seconds: float, ctx: Context) -> str:
    """Sleep, reporting progress, then answer."""
    await ctx.report_progress(0, 1, "started")
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@tool(task=TaskSupport("optional", ttl_ms=1000, poll_interval_ms=250))
async def brief() -> str:
    """Kept one second."""
    return "short-lived"


class Again(BaseModel):
    again: bool = Field(description="Whether to go on")


@tool(task="optional")
async def nags(ctx: Context) -> str:
    """Asks again whatever the answer."""
    return ctx.request_input({"again": input_required.elicit("Again?", Again)})


@tool(task="optional")
async def samples(ctx: Context) -> str:
    """Asks the client's model (the test clients do not declare sampling)."""
    return ctx.request_input({"m": input_required.create_message("hi", max_tokens=5)})


@tool(task="optional")
async def maybe_start(ctx: Context) -> str:
    """Calls start_task in a call that may not be able to become a task."""
    await ctx.start_task()
    return f"task id {ctx.task_id}"


@tool
def plain() -> str:
    """Never a task."""
    return "plain"


def app_with(**settings: Any) -> McpApp:
    return McpApp("tasks-test", "1.0.0", tools=[work, brief, nags, samples, maybe_start, plain],
                  settings=Settings.from_env({}, **settings))


async def until_done(c: McpTestClient, task_id: str, within: float = 5.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        task = await c.request("tasks/get", {"taskId": task_id})
        if task["status"] in TERMINAL or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.02)


async def test_another_identity_cannot_see_or_touch_the_task() -> None:
    app = app_with(auth_mode="jwt", auth_secret_key=SECRET)
    alice, bob = bearer(token(sub="alice")), bearer(token(sub="bob"))
    other_tenant = bearer(token(sub="alice", tid="globex"))
    await app.startup()
    try:
        async with McpTestClient(app, era="modern", capabilities=TASKS, headers=alice) as a, \
                McpTestClient(app, era="modern", capabilities=TASKS, headers=bob) as b, \
                McpTestClient(app, era="modern", capabilities=TASKS, headers=other_tenant) as t:
            tid = (await a.call_tool("work", {"seconds": 5}))["taskId"]
            assert len(tid) >= 32
            for c in (b, t):
                calls: list[tuple[str, dict[str, Any]]] = [("tasks/get", {}), ("tasks/cancel", {}),
                                                           ("tasks/update", {"inputResponses": {}})]
                for method, params in calls:
                    with pytest.raises(McpError) as err:
                        await c.request(method, {"taskId": tid, **params})
                    assert err.value.code == -32602 and (err.value.data or {}).get("reason") == "task_not_found"
            assert (await a.request("tasks/get", {"taskId": tid}))["status"] == "working"
            await a.request("tasks/cancel", {"taskId": tid})
    finally:
        await app.shutdown()


async def test_bounds_per_identity_and_per_instance() -> None:
    async with McpTestClient(app_with(tasks_max_per_identity=2), era="modern", capabilities=TASKS) as c:
        for _ in range(2):
            await c.call_tool("work", {"seconds": 5})
        with pytest.raises(McpError) as err:
            await c.call_tool("work", {"seconds": 5})
        assert err.value.code == -32003 and (err.value.data or {}).get("reason") == "too_many_tasks"
        assert (await c.call_tool("plain"))["content"][0]["text"] == "plain"  # ordinary calls go on
    async with McpTestClient(app_with(tasks_max_per_instance=1), era="modern", capabilities=TASKS) as c:
        first = await c.call_tool("work", {"seconds": 0.2})
        with pytest.raises(McpError) as err:
            await c.call_tool("work", {"seconds": 5})
        assert err.value.code == -32000 and (err.value.data or {}).get("reason") == "task_capacity"
        await until_done(c, first["taskId"])
        await asyncio.sleep(0.01)
        assert (await c.call_tool("work", {"seconds": 0}))["resultType"] == "task"  # room again


async def test_a_task_expires_with_its_ttl() -> None:
    async with McpTestClient(app_with(), era="modern", capabilities=TASKS) as c:
        created = await c.call_tool("brief")
        assert created["ttlMs"] == 1000 and created["pollIntervalMs"] == 250
        assert (await until_done(c, created["taskId"]))["result"]["content"][0]["text"] == "short-lived"
        await asyncio.sleep(1.1)
        with pytest.raises(McpError) as err:
            await c.request("tasks/get", {"taskId": created["taskId"]})
        assert err.value.code == -32602


async def test_eras_and_gates() -> None:
    app = app_with()
    await app.startup()
    try:
        async with McpTestClient(app, era="modern", capabilities={}) as c:
            assert (await c.call_tool("work", {"seconds": 0}))["content"][0]["text"] == "slept 0.0"
            assert (await c.call_tool("maybe_start"))["content"][0]["text"] == "task id None"
            with pytest.raises(McpError) as err:
                await c.request("tasks/get", {"taskId": "x"})
            assert err.value.code == -32021 and err.value.http_status == 400  # type: ignore[attr-defined]
            for method in ("tasks/result", "tasks/list"):
                with pytest.raises(McpError) as err:
                    await c.request(method, {"taskId": "x"})
                assert err.value.code == -32601
            bad = await c.call_tool("work", {"seconds": "soon"})  # bad arguments: a plain isError result
            assert bad["isError"] is True
        async with McpTestClient(app, era="modern", capabilities=TASKS) as c:
            created = await c.call_tool("maybe_start")
            assert (await until_done(c, created["taskId"]))["result"]["content"][0]["text"] == \
                f"task id {created['taskId']}"
            with pytest.raises(McpError) as err:  # the Mcp-Name header must name the task
                await c.request("tasks/get", {"taskId": created["taskId"]}, headers={"mcp-name": "other"})
            assert err.value.code == -32020
        async with McpTestClient(app) as c:  # 2025-11-25
            assert (await c.call_tool("work", {"seconds": 0}))["content"][0]["text"] == "slept 0.0"
            with pytest.raises(McpError) as err:
                await c.request("tasks/update", {"taskId": "x", "inputResponses": {}})
            assert err.value.code == -32601
            created = await c.call_tool("brief", task={"ttl": 10 ** 12})
            assert created["task"]["ttl"] == 86_400_000  # capped at MCP_TASKS_MAX_TTL_MS
    finally:
        await app.shutdown()


async def test_how_tasks_end() -> None:
    async with McpTestClient(app_with(max_input_rounds=2), era="modern", capabilities=TASKS) as c:
        tid = (await c.call_tool("work", {"seconds": 0.5}))["taskId"]
        task = await c.request("tasks/get", {"taskId": tid})
        while "statusMessage" not in task:
            await asyncio.sleep(0.02)
            task = await c.request("tasks/get", {"taskId": tid})
        assert task["status"] == "working" and task["statusMessage"] == "started"  # a progress message
        tid = (await c.call_tool("samples"))["taskId"]
        failed = await until_done(c, tid)
        assert failed["status"] == "failed" and failed["error"]["code"] == -32021 and "result" not in failed
        tid = (await c.call_tool("nags"))["taskId"]
        for _ in range(3):
            task = await c.request("tasks/get", {"taskId": tid})
            while task["status"] == "working":
                await asyncio.sleep(0.02)
                task = await c.request("tasks/get", {"taskId": tid})
            if task["status"] != "input_required":
                break
            [key] = task["inputRequests"]
            await c.request("tasks/update", {"taskId": tid, "inputResponses": {key: {"action": "decline"}}})
        assert task["status"] == "failed" and task["error"]["data"] == {"reason": "too_many_input_rounds"}
        assert key == "again#2"  # unique over the task's life


async def test_listen_delivers_the_callers_task_changes() -> None:
    app = app_with()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": TASKS}
    async with McpTestClient(app, era="modern", capabilities=TASKS) as c:
        tid = (await c.call_tool("work", {"seconds": 0.3}))["taskId"]
        body = {"jsonrpc": "2.0", "id": "l1", "method": "subscriptions/listen",
                "params": {"_meta": meta, "notifications": {"taskIds": [tid, "not-a-task"]}}}
        req = c.http.build_request("POST", c.url, content=orjson.dumps(body), headers=c.headers("subscriptions/listen"))
        resp = await c.http.send(req, stream=True)
        events = parse_sse(resp.aiter_lines())
        try:
            ack = orjson.loads((await asyncio.wait_for(events.__anext__(), 5))["data"])
            assert ack["params"]["notifications"] == {"taskIds": [tid]}  # unknown ids are not agreed to
            note = orjson.loads((await asyncio.wait_for(events.__anext__(), 5))["data"])
            assert note["method"] == "notifications/tasks"
            assert note["params"]["taskId"] == tid and note["params"]["status"] == "completed"
            assert note["params"]["result"]["content"][0]["text"] == "slept 0.3"
        finally:
            await resp.aclose()
        no_ext = {"_meta": {**meta, "io.modelcontextprotocol/clientCapabilities": {}}, "notifications": {
            "taskIds": [tid]}}
        with pytest.raises(McpError) as err:
            await c.request("subscriptions/listen", no_ext)
        assert err.value.code == -32021


async def test_a_2025_session_hears_of_its_tasks_on_its_stream() -> None:
    async with McpTestClient(app_with()) as c:
        resp, events = await c.open_stream()
        try:
            created = await c.call_tool("work", {"seconds": 0.2}, task={}, progress_token="p1")
            tid = created["task"]["taskId"]
            seen: list[dict[str, Any]] = []
            while not any(m.get("params", {}).get("status") == "completed" for m in seen):
                ev = await asyncio.wait_for(events.__anext__(), 5)
                if ev.get("data"):
                    seen.append(orjson.loads(ev["data"]))
            methods = [m["method"] for m in seen]
            assert "notifications/progress" in methods and "notifications/tasks/status" in methods
            progress = next(m for m in seen if m["method"] == "notifications/progress")
            assert progress["params"]["progressToken"] == "p1"
            assert progress["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": tid}
            assert seen[-1]["params"]["taskId"] == tid
        finally:
            await resp.aclose()
        assert (await c.request("tasks/get", {"taskId": tid}))["status"] == "completed"


async def test_nothing_runs_once_the_tasks_ended() -> None:
    app = app_with()
    async with McpTestClient(app, era="modern", capabilities=TASKS) as c:
        tids = [(await c.call_tool("work", {"seconds": 0.05}))["taskId"] for _ in range(5)]
        for tid in tids:
            await until_done(c, tid)
        await asyncio.sleep(0.05)
        svc = app.tasks
        assert svc.executions.running == {} and svc.watcher is None  # memory store: no watcher at all
        assert svc.executions._renewer is None


async def test_an_anonymous_2025_task_belongs_to_its_session() -> None:
    app = app_with()
    await app.startup()
    try:
        async with McpTestClient(app) as one, McpTestClient(app) as two:
            tid = (await one.call_tool("work", {"seconds": 5}, task={}))["task"]["taskId"]
            assert [t["taskId"] for t in (await one.request("tasks/list"))["tasks"]] == [tid]
            assert (await two.request("tasks/list"))["tasks"] == []
            with pytest.raises(McpError) as err:
                await two.request("tasks/get", {"taskId": tid})
            assert err.value.code == -32602
            await one.request("tasks/cancel", {"taskId": tid})
    finally:
        await app.shutdown()
    async with McpTestClient(app_with(session_mode="stateless")) as c:  # no session, no identity
        await c.call_tool("work", {"seconds": 0}, task={})
        assert (await c.request("tasks/list"))["tasks"] == []


async def test_an_app_without_task_tools_never_watches_task_leases(caplog: pytest.LogCaptureFixture) -> None:
    from tests.servers import free_port

    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    app = McpApp("no-tasks", "1.0.0", tools=[plain],
                 settings=Settings.from_env({}, session_store="redis", redis_url=down))
    await app.startup()
    try:
        await asyncio.sleep(0.3)
        assert app.tasks.watcher is not None and not app.tasks.watcher.started
    finally:
        await app.shutdown()
    assert "task lease watcher" not in caplog.text
    with_tasks = McpApp("tasks", "1.0.0", tools=[work], settings=Settings.from_env({}, session_store="redis",
                                                                                    redis_url=down))
    await with_tasks.startup()
    try:
        assert with_tasks.tasks.watcher is not None and with_tasks.tasks.watcher.started
    finally:
        await with_tasks.shutdown()


async def test_a_task_attempt_runs_the_tools_one_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline of a tool is built once (its first call) and kept; the task's attempt runs
    that same pipeline, its dependency and Context included, and a plain call afterwards too."""
    from typing import Annotated

    from mcpcore import Depends
    from mcpcore.server import invoke

    built: list[object] = []
    original = invoke.Pipeline.__init__

    def counting(self: Any, family: Any, d: Any) -> None:
        built.append(d)
        original(self, family, d)

    monkeypatch.setattr(invoke.Pipeline, "__init__", counting)

    async def prefix() -> str:
        return "dep:"

    @tool(task="optional")
    async def tagged(text: str, tag: Annotated[str, Depends(prefix)], ctx: Context) -> str:
        """Answer with the dependency's value and where it runs."""
        return f"{tag}{text}:{ctx.task_id or 'call'}"

    app = McpApp("pipeline-test", "1.0.0", tools=[tagged])
    async with McpTestClient(app, era="modern", capabilities=TASKS) as c:
        tid = (await c.call_tool("tagged", {"text": "a"}))["taskId"]
        done = await until_done(c, tid)
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == f"dep:a:{tid}"
    async with McpTestClient(app, era="modern") as c:  # no tasks extension: an ordinary call
        assert (await c.call_tool("tagged", {"text": "b"}))["content"][0]["text"] == "dep:b:call"
    definition = app.registry.tools["tagged"]
    assert built == [definition] and isinstance(definition.pipeline, invoke.Pipeline)
