"""Tasks under faults, with a real Redis and real server processes: a finished run is never
reported lost and a tool that must not run twice never does, when the store's connection is cut
while the handler finishes, when the store is paused past the lease, and when one instance's wall
clock runs 15 s ahead of another's.

Each run of a tool appends a line to a file (outside Redis), so the test counts runs even while
the store is away.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis_asyncio

from mcpcore.errors import McpError
from mcpcore.testing import McpTestClient
from tests.redis_topologies import Topology, redis_topology
from tests.servers import libfaketime, run_server
from tests.tcp_cut import cuttable_proxy

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TERMINAL = ("completed", "failed", "cancelled")
APP = "tests.apps.charges:app"


@pytest.fixture
def redis_one(tmp_path: Path) -> Iterator[Topology]:
    with redis_topology("standalone", tmp_path / "redis") as topo:
        yield topo


def _env(redis_url: str, sandbox: Path, lease_ms: int, **extra: str) -> dict[str, str]:
    return {"MCP_SESSION_STORE": "redis", "STORAGE_PROVIDER_TYPE": "redis", "REDIS_URL": redis_url,
            "MCP_TASKS_LEASE_MS": str(lease_ms), "MCP_EXAMPLE_SANDBOX": str(sandbox), "MCP_LOG_LEVEL": "info",
            **extra}


def _runs(sandbox: Path, key: str) -> int:
    path = sandbox / key
    return len(path.read_text().splitlines()) if path.exists() else 0


async def _until_terminal(c: McpTestClient, task_id: str, within: float) -> dict[str, Any]:
    """Poll ``tasks/get`` until the task ends (a 503 while the store comes back is polled again)."""
    deadline = time.monotonic() + within
    task: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            task = await c.request("tasks/get", {"taskId": task_id})
        except McpError:
            task = {}
        if task.get("status") in TERMINAL:
            return task
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {task_id[:8]} did not end within {within} s: {task}")


def _text(task: dict[str, Any]) -> str:
    assert task["status"] == "completed", task
    return str(task["result"]["content"][0]["text"])


@pytest.mark.parametrize("tool", ["charge", "charge_safely"])
async def test_an_ending_written_while_the_store_is_cut_off_is_kept(redis_one: Topology, tmp_path: Path,
                                                                    tool: str) -> None:
    # The connection to Redis is cut for 2.5 s, shorter than the 3 s lease, while the handler
    # finishes: the outcome write is tried again until Redis is back.
    with cuttable_proxy(redis_one.url) as (proxy, url), \
            run_server(APP, env=_env(url, tmp_path, 3000)) as mcp:
        async with McpTestClient(url=mcp, era="modern", capabilities=TASKS) as c:
            tid = (await c.call_tool(tool, {"key": tool, "seconds": 1.0}))["taskId"]
            await asyncio.sleep(0.5)
            proxy.cut(2.5)
            await asyncio.sleep(2.6)
            task = await _until_terminal(c, tid, within=15)
            assert _text(task) == f"charged {tool} (run 1)"
            await asyncio.sleep(3.5)  # past another lease: nobody takes the task over
            again = await c.request("tasks/get", {"taskId": tid})
    assert proxy.refused > 0  # the instance did try to reach Redis during the cut
    assert _text(again) == f"charged {tool} (run 1)"
    assert _runs(tmp_path, tool) == 1


async def test_a_store_paused_past_the_lease_does_not_rob_the_running_instance(redis_one: Topology,
                                                                               tmp_path: Path) -> None:
    # CLIENT PAUSE for 3.5 s, longer than the 2 s lease, during a 5 s task on one healthy
    # instance: its lease lapses while it cannot renew, and it must renew, not take over, its own.
    with run_server(APP, env=_env(redis_one.url, tmp_path, 2000)) as mcp:
        async with McpTestClient(url=mcp, era="modern", capabilities=TASKS) as c:
            tid = (await c.call_tool("charge", {"key": "paused", "seconds": 5.0}))["taskId"]
            await asyncio.sleep(1.0)
            admin = redis_asyncio.from_url(redis_one.url)
            try:
                await admin.execute_command("CLIENT", "PAUSE", 3500, "ALL")
            finally:
                await admin.aclose()
            task = await _until_terminal(c, tid, within=20)
    assert _text(task) == "charged paused (run 1)"
    assert _runs(tmp_path, "paused") == 1


async def test_an_instance_whose_clock_runs_ahead_takes_over_nothing(redis_one: Topology, tmp_path: Path) -> None:
    # Instance B's wall clock is 15 s ahead of A's (libfaketime); leases are 2 s. A runs a task
    # of each kind for 4 s: B must neither fail the one nor run the other a second time.
    env = _env(redis_one.url, tmp_path, 2000)
    ahead = {**env, "LD_PRELOAD": libfaketime(), "FAKETIME": "+15s", "DONT_FAKE_MONOTONIC": "1"}
    with run_server(APP, env=env) as a_url, run_server(APP, env=ahead) as b_url:
        a_date = httpx.get(a_url.replace("/mcp", "/healthz")).headers["date"]
        b_date = httpx.get(b_url.replace("/mcp", "/healthz")).headers["date"]
        from email.utils import parsedate_to_datetime

        skew = (parsedate_to_datetime(b_date) - parsedate_to_datetime(a_date)).total_seconds()
        assert 13 <= skew <= 17, (a_date, b_date)  # the fault is in place
        async with McpTestClient(url=a_url, era="modern", capabilities=TASKS) as a, \
                McpTestClient(url=b_url, era="modern", capabilities=TASKS) as b:
            once = (await a.call_tool("charge", {"key": "skew-once", "seconds": 4.0}))["taskId"]
            safe = (await a.call_tool("charge_safely", {"key": "skew-safe", "seconds": 4.0}))["taskId"]
            await asyncio.sleep(1.5)
            assert (await b.request("tasks/get", {"taskId": once}))["status"] == "working"
            assert (await b.request("tasks/get", {"taskId": safe}))["status"] == "working"
            first = await _until_terminal(b, once, within=15)
            second = await _until_terminal(b, safe, within=15)
    assert _text(first) == "charged skew-once (run 1)"
    assert _text(second) == "charged skew-safe (run 1)"
    assert _runs(tmp_path, "skew-once") == 1 and _runs(tmp_path, "skew-safe") == 1
