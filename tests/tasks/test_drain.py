"""SIGTERM while a 2025-11-25 client waits in ``tasks/result``: the drain ends the wait at once
with an answer the client acts on (503, ``Retry-After``, ``-32000``: ask again), not an HTTP 500
once the graceful shutdown gives up, and the log has no traceback."""

from __future__ import annotations

import asyncio
import signal
import time

import orjson
import pytest

from mcpcore.testing import McpTestClient
from tests.servers import PROCESSES, run_server, server_log

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TASKS = {"tasks": {"requests": {"tools": {"call": {}}}}}


@pytest.mark.serial
async def test_sigterm_ends_a_tasks_result_wait_with_a_retryable_answer() -> None:
    with run_server("tests.apps.tasks:app", env={"MCP_LOG_LEVEL": "info"}) as url:
        proc = PROCESSES[url]
        async with McpTestClient(url=url, capabilities=TASKS) as c:
            created = await c.request("tools/call", {"name": "fragile", "arguments": {"key": "drain"},
                                                     "task": {"ttl": 60_000}})
            task_id = created["task"]["taskId"]
            body = {"jsonrpc": "2.0", "id": 99, "method": "tasks/result", "params": {"taskId": task_id}}
            waiting = asyncio.create_task(c.post(body, c.headers("tasks/result")))
            await asyncio.sleep(0.5)
            assert not waiting.done()
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            answer = await asyncio.wait_for(waiting, 10)
            answered_in = time.monotonic() - sent
            await asyncio.to_thread(proc.wait, 10)
        log = server_log(url)
    assert answered_in < 2, answered_in
    error = orjson.loads(answer.content)["error"]
    assert (answer.status_code, answer.headers.get("retry-after"), error["code"]) == (503, "1", -32000), answer.text
    assert error["data"]["reason"] == "shutting_down" and error["data"]["taskId"] == task_id
    assert "Traceback" not in log and "CancelledError" not in log, log[log.find("Traceback") - 300:][:3000]
