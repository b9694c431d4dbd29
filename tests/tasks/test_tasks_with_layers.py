"""Tasks meet the layers of issue 19: a task's attempts resolve the tool's dependencies (and run
their cleanup once per attempt), the middleware sees the call that creates the task, and a task
tool hidden from a caller is as unknown to it as any hidden tool."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import pytest

from mcpcore import Call, CallNext, Context, Depends, McpApp, McpError, Middleware, Settings, tool
from mcpcore.testing import McpTestClient
from tests.auth.test_http_auth import SECRET, bearer, token

pytestmark = pytest.mark.anyio

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
opened: list[str] = []
closed: list[str] = []


async def connection(ctx: Context) -> AsyncIterator[str]:
    """A resource opened for an attempt and closed after it."""
    opened.append(ctx.request_id)
    try:
        yield f"conn-{len(opened)}"
    finally:
        closed.append(ctx.request_id)


@tool(task="required")
async def report(rows: int, conn: Annotated[str, Depends(connection)], ctx: Context) -> str:
    """A long report that reads through a dependency."""
    await asyncio.sleep(0.01)
    return f"{rows} rows via {conn}"


@tool(task="required", visible_to=["reports:admin"])
async def secret_report() -> str:
    """Only for admins."""
    return "secret"


class Seen(Middleware):
    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, Any]] = []

    async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
        result = await call_next(call)
        self.calls.append((call.method, call.name, result.get("resultType")))
        return result


async def until_done(c: McpTestClient, task_id: str, within: float = 5.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        task = await c.request("tasks/get", {"taskId": task_id})
        if task["status"] in ("completed", "failed", "cancelled") or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.02)


async def test_a_task_resolves_its_dependencies_and_cleans_up_once() -> None:
    opened.clear()
    closed.clear()
    seen = Seen()
    app = McpApp("tasks-layers", "1.0.0", tools=[report, secret_report], middleware=[seen],
                 settings=Settings.from_env({}))
    async with McpTestClient(app, era="modern", capabilities=TASKS) as c:
        created = await c.call_tool("report", {"rows": 3})
        assert created["resultType"] == "task"
        done = await until_done(c, created["taskId"])
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == "3 rows via conn-1"
        assert len(opened) == 1 and closed == opened  # one attempt: opened once, closed once
        assert seen.calls == [("tools/call", "report", "task")]  # the layer saw the call that made it
        # The dependency is not part of what the caller sends.
        listed = {t["name"]: t for t in (await c.request("tools/list"))["tools"]}
        assert set(listed["report"]["inputSchema"]["properties"]) == {"rows"}


async def test_a_hidden_task_tool_is_unknown_to_who_may_not_see_it() -> None:
    app = McpApp("tasks-layers", "1.0.0", tools=[report, secret_report],
                 settings=Settings.from_env({}, auth_mode="jwt", auth_secret_key=SECRET))
    await app.startup()
    try:
        async with McpTestClient(app, era="modern", capabilities=TASKS, headers=bearer(token())) as c:
            assert "secret_report" not in {t["name"] for t in (await c.request("tools/list"))["tools"]}
            with pytest.raises(McpError) as err:
                await c.call_tool("secret_report")
            assert (err.value.data or {}).get("reason") == "unknown_tool"
        admin = bearer(token(scope="reports:admin"))
        async with McpTestClient(app, era="modern", capabilities=TASKS, headers=admin) as c:
            assert "secret_report" in {t["name"] for t in (await c.request("tools/list"))["tools"]}
            created = await c.call_tool("secret_report")
            assert (await until_done(c, created["taskId"]))["result"]["content"][0]["text"] == "secret"
    finally:
        await app.shutdown()


class PassThrough(Middleware):
    """A layer that only passes ``tools/call`` on."""

    async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
        return await call_next(call)


class Rethrows(Middleware):
    """A layer that looks at the method's error and lets it go on."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        try:
            return await call_next(call)
        except McpError as err:
            self.seen.append(err.code)
            raise


@pytest.mark.parametrize("layers", [[], [PassThrough()], [Rethrows(), PassThrough()]],
                         ids=["bare", "pass-through", "rethrows"])
async def test_a_required_task_tool_refused_to_a_client_without_tasks_keeps_its_error(layers: list[Middleware]) -> None:
    """Without the tasks extension (2026-07-28) or ``params.task`` (2025-11-25) a tool that runs
    only as a task is a protocol refusal, middleware or not: HTTP 400 with ``-32021`` on
    2026-07-28, ``-32601`` on a 2025 session (HTTP 200), never the tool's ``isError`` result."""
    app = McpApp("tasks-layers", "1.0.0", tools=[report], middleware=layers, settings=Settings.from_env({}))
    async with McpTestClient(app, era="modern", capabilities={}) as c:
        with pytest.raises(McpError) as err:
            await c.call_tool("report", {"rows": 1})
        assert err.value.code == -32021 and err.value.http_status == 400  # type: ignore[attr-defined]
        assert err.value.data["requiredCapabilities"] == {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    async with McpTestClient(app) as c:
        with pytest.raises(McpError) as err:
            await c.call_tool("report", {"rows": 1})
        assert err.value.code == -32601 and err.value.http_status == 200  # type: ignore[attr-defined]
        assert err.value.data["reason"] == "task_required"
    for layer in layers:
        if isinstance(layer, Rethrows):
            assert layer.seen == [-32021, -32601]  # the layers saw the method's own McpError


async def test_a_layers_own_error_around_a_task_tool_is_the_tools_error_result() -> None:
    class Refuses(Middleware):
        async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
            raise McpError(-32021, "refused by the layer")

    app = McpApp("tasks-layers", "1.0.0", tools=[report], middleware=[Refuses()], settings=Settings.from_env({}))
    async with McpTestClient(app, era="modern", capabilities={}) as c:
        result = await c.call_tool("report", {"rows": 1})
        assert result["isError"] is True and "refused by the layer" in result["content"][0]["text"]
