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
