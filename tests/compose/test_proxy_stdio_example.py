"""The example server run as a stdio backend (one process per caller identity): completions and
tasks through the gateway, each caller era against each backend era."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import pytest

from mcpcore import McpApp, McpError, Settings
from mcpcore.compose import proxy
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]
COMMAND = [sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio"]
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
RELATED = "io.modelcontextprotocol/related-task"


def gateway(backend_era: str) -> McpApp:
    app = McpApp("gateway", settings=Settings.from_env({}))
    app.mount(proxy(COMMAND, era=backend_era), namespace="ex")
    return app


async def _until(c: McpTestClient, task_id: str, *, leave: str = "working") -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while (task := await c.request("tasks/get", {"taskId": task_id}))["status"] == leave:
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.05)
    return task


@pytest.mark.parametrize("backend_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_completions_are_asked_of_a_stdio_backend(era: str, backend_era: str) -> None:
    async with McpTestClient(gateway(backend_era), era=era) as c:
        prompt = await c.request("completion/complete", {
            "ref": {"type": "ref/prompt", "name": "ex_test_prompt_with_arguments"},
            "argument": {"name": "arg1", "value": "par"}})
        assert prompt["completion"]["values"] == ["paris", "park", "party"], prompt
        template = await c.request("completion/complete", {
            "ref": {"type": "ref/resource", "uri": "test://ex/template/{id}/data"},
            "argument": {"name": "id", "value": "1"}})
        assert template["completion"]["values"] == ["1", "123"], template


@pytest.mark.parametrize("backend_era", ERAS)
async def test_a_2026_callers_task_on_a_stdio_backend(backend_era: str) -> None:
    async with McpTestClient(gateway(backend_era), era="modern", capabilities={**TASKS, "elicitation": {}}) as c:
        created = await c.call_tool("ex_slow_compute", {"seconds": 0.3, "label": "nightly"})
        if backend_era == "legacy":  # a 2025 server over stdio makes no task for a 2026-07-28 caller
            assert created["content"][0]["text"] == "Computed nightly in 0.3s", created
            return
        assert created["resultType"] == "task" and created["taskId"].startswith("proxy:ex:"), created
        done = await _until(c, created["taskId"])
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "Computed nightly in 0.3s"
        asking = await c.call_tool("ex_confirm_delete", {"filename": "old.txt"})
        task = await _until(c, asking["taskId"])
        assert task["status"] == "input_required", task
        [key] = task["inputRequests"]
        await c.request("tasks/update", {"taskId": asking["taskId"],
                                         "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}})
        done = await _until(c, asking["taskId"], leave="input_required")
        done = await _until(c, asking["taskId"]) if done["status"] == "working" else done
        assert done["result"]["content"][0]["text"] == "Deleted old.txt", done
        slow = await c.call_tool("ex_slow_compute", {"seconds": 30})
        await c.request("tasks/cancel", {"taskId": slow["taskId"]})
        assert (await _until(c, slow["taskId"]))["status"] == "cancelled"


@pytest.mark.parametrize("backend_era", ERAS)
async def test_a_2025_callers_task_on_a_stdio_backend(backend_era: str) -> None:
    asked: list[dict[str, Any]] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"confirm": True}}

    async with McpTestClient(gateway(backend_era), era="legacy", protocol_version="2025-11-25",
                             capabilities={"tasks": {}, "elicitation": {}},
                             handlers={"elicitation/create": elicit}) as c:
        created = await c.request("tools/call", {"name": "ex_slow_compute", "task": {"ttl": 60000},
                                                 "arguments": {"seconds": 0.3, "label": "nightly"}})
        tid = created["task"]["taskId"]
        assert tid.startswith("proxy:ex:") and "ttl" in created["task"], created
        result = await c.request("tasks/result", {"taskId": tid})
        assert result["content"][0]["text"] == "Computed nightly in 0.3s", result
        assert result["_meta"][RELATED] == {"taskId": tid}
        assert (await c.request("tasks/get", {"taskId": tid}))["status"] == "completed"
        listed = [t["taskId"] for t in (await c.request("tasks/list"))["tasks"]]
        assert (tid in listed) == (backend_era == "legacy"), listed
        confirm = (await c.request("tools/call", {"name": "ex_confirm_delete", "task": {},
                                                  "arguments": {"filename": "old.txt"}}))["task"]["taskId"]
        done = await c.request("tasks/result", {"taskId": confirm})
        assert done["content"][0]["text"] == "Deleted old.txt" and asked[0]["_meta"][RELATED] == {"taskId": confirm}
        slow = (await c.request("tools/call", {"name": "ex_slow_compute", "task": {},
                                               "arguments": {"seconds": 30}}))["task"]["taskId"]
        assert (await c.request("tasks/cancel", {"taskId": slow}))["status"] == "cancelled"
        with pytest.raises(McpError):
            await c.request("tasks/get", {"taskId": "proxy:ex:nope"})
