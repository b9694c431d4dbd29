"""A 2025-11-25 caller's tasks through the proxy: the example server as a real backend (uvicorn),
spoken to in each era. The task lives in the backend; the gateway's id is ``proxy:ex:<backend's>``
and ``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel`` reach it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcpcore import McpApp, McpError, Settings
from mcpcore.compose import proxy
from mcpcore.testing import McpTestClient
from tests.servers import run_server

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]
RELATED = "io.modelcontextprotocol/related-task"
TASK_CAPS = {"tasks": {"list": {}, "cancel": {}}}


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    sandbox = tmp_path_factory.mktemp("sandbox")
    with run_server(env={"MCP_EXAMPLE_SANDBOX": str(sandbox), "MCP_LOG_LEVEL": "info"}) as url:
        yield url


def gateway(url: str, backend_era: str) -> McpApp:
    app = McpApp("gateway", settings=Settings.from_env({}))
    app.mount(proxy(url, era=backend_era), namespace="ex")
    return app


async def _until_done(c: McpTestClient, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while (task := await c.request("tasks/get", {"taskId": task_id}))["status"] == "working":
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.05)
    return task


@pytest.mark.parametrize("backend_era", ERAS)
async def test_a_2025_callers_task_is_created_polled_and_collected(backend: str, backend_era: str) -> None:
    async with McpTestClient(gateway(backend, backend_era), era="legacy", protocol_version="2025-11-25",
                             capabilities=TASK_CAPS) as c:
        if backend_era == "legacy":  # a 2025 list says which tools take tasks; the gateway says it too
            tools = {t["name"]: t for t in await c.list_tools()}
            assert tools["ex_slow_compute"]["execution"] == {"taskSupport": "optional"}
            assert "tasks" in c.server_capabilities, c.server_capabilities
        created = await c.request("tools/call", {"name": "ex_slow_compute", "task": {"ttl": 60000},
                                                 "arguments": {"seconds": 0.3, "label": "nightly"}})
        task = created["task"] if "task" in created else pytest.fail(repr(created))
        tid = task["taskId"]
        assert tid.startswith("proxy:ex:") and task["status"] == "working", created
        assert "ttl" in task and "pollInterval" in task and "ttlMs" not in task, task
        done = await _until_done(c, tid)
        assert done["status"] == "completed" and done["taskId"] == tid and "result" not in done, done
        result = await c.request("tasks/result", {"taskId": tid})
        assert result["content"][0]["text"] == "Computed nightly in 0.3s", result
        assert result["_meta"][RELATED] == {"taskId": tid}
        listed = [t["taskId"] for t in (await c.request("tasks/list"))["tasks"]]
        # a 2026-07-28 backend has no tasks/list: its tasks are not listed to 2025 callers
        assert (tid in listed) == (backend_era == "legacy"), listed
        with pytest.raises(McpError):  # an id the gateway never gave is nobody's
            await c.request("tasks/get", {"taskId": "proxy:ex:nope"})


@pytest.mark.parametrize("backend_era", ERAS)
async def test_a_2025_callers_task_asks_on_tasks_result_and_is_cancelled(backend: str, backend_era: str) -> None:
    asked: list[dict[str, Any]] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"confirm": True}}

    caps = {**TASK_CAPS, "elicitation": {}}
    async with McpTestClient(gateway(backend, backend_era), era="legacy", protocol_version="2025-11-25",
                             capabilities=caps, handlers={"elicitation/create": elicit}) as c:
        created = await c.request("tools/call", {"name": "ex_confirm_delete", "task": {},
                                                 "arguments": {"filename": "old.txt"}})
        tid = created["task"]["taskId"]
        assert tid.startswith("proxy:ex:"), created
        result = await c.request("tasks/result", {"taskId": tid})  # the question comes on this stream
        assert result["content"][0]["text"] == "Deleted old.txt", result
        assert len(asked) == 1 and asked[0]["_meta"][RELATED] == {"taskId": tid}, asked
        slow = (await c.request("tools/call", {"name": "ex_slow_compute", "task": {},
                                               "arguments": {"seconds": 30}}))["task"]["taskId"]
        cancelled = await c.request("tasks/cancel", {"taskId": slow})
        assert cancelled["status"] == "cancelled" and cancelled["taskId"] == slow, cancelled
        assert (await c.request("tasks/get", {"taskId": slow}))["status"] == "cancelled"
        with pytest.raises(McpError) as again:  # a finished task cannot be cancelled (2025-11-25)
            await c.request("tasks/cancel", {"taskId": slow})
        assert again.value.code == -32602


@pytest.mark.parametrize("backend_era", ERAS)
async def test_a_2025_caller_without_a_task_gets_the_result(backend: str, backend_era: str) -> None:
    async with McpTestClient(gateway(backend, backend_era), era="legacy", protocol_version="2025-11-25",
                             capabilities=TASK_CAPS) as c:
        r = await c.call_tool("ex_slow_compute", {"seconds": 0.1, "label": "now"})
        assert r["content"][0]["text"] == "Computed now in 0.1s" and "task" not in r, r
