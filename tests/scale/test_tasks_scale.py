"""Tasks across instances sharing one Redis topology: a task created on A is polled on B,
answered on C and read on A; cancelled on B, it stops on A; the instance running tasks is
SIGKILLed, and within the lease plus 2 s its re-runnable task completes on another instance and
the other is failed with the reason."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpcore.testing import McpTestClient

from .harness import Cluster, RoundRobinClient, cluster, kill

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
LEASE_MS = 2000
TERMINAL = ("completed", "failed", "cancelled")


@pytest.fixture(scope="module", params=["standalone", "cluster", "sentinel"])
def abc(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("tasks"), "tests.apps.tasks:app", n=3, topology=request.param) as c:
        yield c


def _client(url: str) -> McpTestClient:
    return McpTestClient(url=url, era="modern", capabilities=TASKS)


async def _until(c: McpTestClient, task_id: str, done: Callable[[dict[str, Any]], bool],
                 within: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        task = await c.request("tasks/get", {"taskId": task_id})
        if done(task) or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.05)


async def _state(c: McpTestClient, key: str) -> Any:
    return (await c.call_tool("read_state", {"key": key}))["structuredContent"]["value"]


async def test_created_on_a_polled_on_b_answered_on_c_read_on_a(abc: Cluster) -> None:
    a_url, b_url, c_url = abc.urls
    async with _client(a_url) as a, _client(b_url) as b, _client(c_url) as c:
        created = await a.call_tool("ask", {})
        assert created["resultType"] == "task"
        tid = created["taskId"]
        asked = await _until(b, tid, lambda t: t["status"] == "input_required")
        assert asked["status"] == "input_required"
        [key] = asked["inputRequests"]
        ack = await c.request("tasks/update", {"taskId": tid, "inputResponses": {
            key: {"action": "accept", "content": {"text": "hello"}}}})
        assert ack["resultType"] == "complete"
        done = await _until(a, tid, lambda t: t["status"] in TERMINAL)
        assert done["status"] == "completed"
        assert done["result"]["content"][0]["text"] == "you said hello"


async def test_cancelled_on_b_stops_on_a(abc: Cluster) -> None:
    a_url, b_url, c_url = abc.urls
    key = f"tick-{time.monotonic_ns()}"
    async with _client(a_url) as a, _client(b_url) as b, _client(c_url) as c:
        tid = (await a.call_tool("ticker", {"key": key}))["taskId"]
        deadline = time.monotonic() + 10
        while (await _state(c, key) or 0) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await b.request("tasks/cancel", {"taskId": tid}) == {
            "resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": {
                "name": "tasks-scale", "version": "1.0.0"}}}
        assert (await _until(c, tid, lambda t: t["status"] in TERMINAL))["status"] == "cancelled"
        deadline = time.monotonic() + 5
        while await _state(c, key + "-stopped") is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stopped = await _state(c, key + "-stopped")
        assert stopped is not None and stopped["signal"] is True  # ctx.signal fired on A, the run ended
        ticks = await _state(c, key)
        await asyncio.sleep(0.5)
        assert await _state(c, key) == ticks


async def test_2025_result_on_another_instance_asks_through_a_third(abc: Cluster) -> None:
    async def answer(params: dict[str, Any] | None) -> dict[str, Any]:
        assert params is not None and "io.modelcontextprotocol/related-task" in params["_meta"]
        return {"action": "accept", "content": {"text": "over there"}}

    async with RoundRobinClient(abc.urls, capabilities={"elicitation": {}},
                                handlers={"elicitation/create": answer}) as c:
        created = await c.call_tool("ask", {}, task={"ttl": 60_000})
        tid = created["task"]["taskId"]
        await asyncio.sleep(0.3)
        result = await c.request("tasks/result", {"taskId": tid})
        assert result["content"][0]["text"] == "you said over there"
        assert len(set(c.sent_to)) == 3


@pytest.fixture(params=["standalone", "cluster"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    with cluster(tmp_path, "tests.apps.tasks:app", n=2, topology=request.param,
                 extra_env={"MCP_TASKS_LEASE_MS": str(LEASE_MS)}) as c:
        yield c


async def test_sigkill_reruns_the_safe_task_elsewhere_and_fails_the_other(pair: Cluster) -> None:
    a_url, b_url = pair.urls
    stamp = time.monotonic_ns()
    async with _client(a_url) as a, _client(b_url) as b:
        safe = (await a.call_tool("resumable", {"key": f"safe-{stamp}"}))["taskId"]
        unsafe = (await a.call_tool("fragile", {"key": f"unsafe-{stamp}"}))["taskId"]
        deadline = time.monotonic() + 10
        while (await _state(b, f"safe-{stamp}") != 1 or await _state(b, f"unsafe-{stamp}") != "started") \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(LEASE_MS / 1000)  # a renewal or two: the lease is held, not merely taken
        assert (await b.request("tasks/get", {"taskId": safe}))["status"] == "working"
        kill(a_url)
        killed = time.monotonic()
        limit = LEASE_MS / 1000 + 2
        rerun = await _until(b, safe, lambda t: t["status"] in TERMINAL, within=limit + 5)
        rerun_s = time.monotonic() - killed
        failed = await _until(b, unsafe, lambda t: t["status"] in TERMINAL, within=limit + 5)
        failed_s = time.monotonic() - killed
    print(f"after SIGKILL: re-run completed in {rerun_s:.2f} s, the other failed in {failed_s:.2f} s "
          f"(lease {LEASE_MS / 1000:g} s)")
    assert rerun["status"] == "completed", rerun
    assert rerun["result"]["content"][0]["text"] == "finished on run 2"
    assert failed["status"] == "failed", failed
    assert failed["error"]["data"]["reason"] == "instance_lost"
    assert "not declared safe to run again" in failed["error"]["message"]
    assert rerun_s <= limit and failed_s <= limit, (rerun_s, failed_s)
