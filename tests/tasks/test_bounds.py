"""What tasks may keep, through the app: anonymous callers each have their own quota (by address),
a task's own size is capped (its arguments when created, its result when it ends), and what an
identity keeps, finished tasks included, is bounded in count and bytes, in memory and in Redis."""

from __future__ import annotations

import asyncio
import gc
import os
import time
import tracemalloc
from typing import Annotated, Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field

from mcpcore import McpApp, McpError, Settings, tool
from mcpcore.tasks.memory import MemoryTaskStore
from mcpcore.testing import McpTestClient
from mcpcore.testing.asgi import StreamingASGITransport

pytestmark = pytest.mark.anyio

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TERMINAL = ("completed", "failed", "cancelled")


@tool(task="optional")
async def hold(seconds: Annotated[float, Field(description="How long to run")]) -> str:
    """Run a while."""
    await asyncio.sleep(seconds)
    return "held"


@tool(task="optional")
async def echo(text: Annotated[str, Field(description="What to send back")],
               times: Annotated[int, Field(description="How many copies")] = 1) -> str:
    """Send the text back."""
    return text * times


@tool(task="optional")
async def measure(blob: Annotated[str, Field(description="A large argument")]) -> int:
    """Answer the argument's length."""
    return len(blob)


def app_with(**settings: Any) -> McpApp:
    return McpApp("bounds-test", "1.0.0", tools=[hold, echo, measure], settings=Settings.from_env({}, **settings))


def from_address(c: McpTestClient, app: McpApp, address: str) -> None:
    """Send ``c``'s requests from ``address`` (in process)."""
    c.http = httpx.AsyncClient(transport=StreamingASGITransport(app, client=(address, 40000)), timeout=10)


async def until_done(c: McpTestClient, task_id: str, within: float = 5.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        task = await c.request("tasks/get", {"taskId": task_id})
        if task["status"] in TERMINAL or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.01)


async def test_anonymous_callers_at_other_addresses_keep_their_own_quota() -> None:
    app = app_with(tasks_max_per_identity=2)
    await app.startup()
    try:
        async with McpTestClient(app, era="modern", capabilities=TASKS) as a, \
                McpTestClient(app, era="modern", capabilities=TASKS) as b:
            from_address(a, app, "10.0.0.1")
            from_address(b, app, "10.0.0.2")
            for _ in range(2):
                await a.call_tool("hold", {"seconds": 30})
            with pytest.raises(McpError) as err:
                await a.call_tool("hold", {"seconds": 30})
            assert err.value.code == -32003
            assert (err.value.data or {}).get("reason") == "too_many_tasks"
            assert "10.0.0.1" in err.value.message and "10.0.0.1" in (err.value.data or {})["quota"]
            created = await b.call_tool("hold", {"seconds": 0})  # another client is not locked out
            assert created["resultType"] == "task"
            assert (await until_done(b, created["taskId"]))["status"] == "completed"
    finally:
        await app.shutdown()


async def test_a_task_too_large_to_keep_is_refused_or_fails_with_the_reason() -> None:
    async with McpTestClient(app_with(tasks_max_task_bytes=65_536), era="modern", capabilities=TASKS) as c:
        with pytest.raises(McpError) as err:
            await c.call_tool("measure", {"blob": "x" * 70_000})
        assert err.value.code == -32602 and (err.value.data or {}).get("reason") == "task_too_large"
        assert "MCP_TASKS_MAX_TASK_BYTES" in err.value.message
        created = await c.call_tool("echo", {"text": "y" * 1000, "times": 100})  # a 100 KB result
        task = await until_done(c, created["taskId"])
        assert task["status"] == "failed", task
        assert task["error"]["data"]["reason"] == "task_result_too_large"
        fine = await until_done(c, (await c.call_tool("echo", {"text": "small"}))["taskId"])
        assert fine["result"]["content"][0]["text"] == "small"


@pytest.mark.parametrize("stores", ["memory", "redis"])
async def test_finished_tasks_are_bounded_per_identity(stores: str, request: pytest.FixtureRequest) -> None:
    settings: dict[str, Any] = {"tasks_max_per_identity": 2, "tasks_max_kept_per_identity": 5,
                                "tasks_max_bytes_per_identity": 600_000, "tasks_max_task_bytes": 300_000}
    if stores == "redis":
        settings |= {"session_store": "redis", "redis_url": request.getfixturevalue("redis_url")}
    async with McpTestClient(app_with(**settings), era="modern", capabilities=TASKS) as c:
        ids = []
        for i in range(8):  # a count bound: 5 kept
            created = await c.call_tool("echo", {"text": f"n{i}"})
            assert (await until_done(c, created["taskId"]))["status"] == "completed"
            ids.append(created["taskId"])
        for tid in ids[:3]:
            with pytest.raises(McpError) as err:
                await c.request("tasks/get", {"taskId": tid})
            assert (err.value.data or {}).get("reason") == "task_not_found"
        for tid in ids[3:]:
            assert (await c.request("tasks/get", {"taskId": tid}))["status"] == "completed"
        big = []
        for _ in range(4):  # a bytes bound: 4 results of ~200 KB (text and structured copy) do not all fit in 600 KB
            created = await c.call_tool("echo", {"text": "z" * 1000, "times": 100})
            assert (await until_done(c, created["taskId"]))["status"] == "completed"
            big.append(created["taskId"])
        kept = 0
        for tid in big:
            try:
                await c.request("tasks/get", {"taskId": tid})
                kept += 1
            except McpError:
                pass
        assert kept == 2
        assert (await c.request("tasks/get", {"taskId": big[-1]}))["status"] == "completed"


async def test_a_hundred_large_tasks_kept_a_day_stay_within_the_identity_bytes() -> None:
    # ~900 KB arguments each, a 24 h ttl: before the bounds, 100 such tasks grew the server by
    # hundreds of MB for a day; now an identity keeps at most MCP_TASKS_MAX_BYTES_PER_IDENTITY.
    app = app_with(tasks_max_per_identity=100, tasks_max_bytes_per_identity=16 * 2**20)
    blob = "q" * 900_000
    async with McpTestClient(app, era="modern", capabilities=TASKS) as c:
        await c.call_tool("measure", {"blob": "warm-up"})
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            ids = []
            for _ in range(100):
                created = await c.request("tools/call", {"name": "measure", "arguments": {"blob": blob},
                                                         "task": {"ttl": 86_400_000}})
                ids.append(created["taskId"])
            await until_done(c, ids[-1])
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        last = await c.request("tasks/get", {"taskId": ids[-1]})
        assert last["result"]["content"][0]["text"] == "900000"
    print(f"100 tasks of ~900 KB kept a day: the server grew {grown / 2**20:.1f} MB")
    assert grown < 40 * 2**20, f"grew {grown / 2**20:.0f} MB"


FUZZ_EXAMPLES = int(os.environ.get("MCPCORE_FUZZ_EXAMPLES", "3000")) // 30
BOUNDS = {"tasks_max_per_identity": 3, "tasks_max_kept_per_identity": 6, "tasks_max_bytes_per_identity": 131_072,
          "tasks_max_task_bytes": 32_768, "tasks_max_ttl_ms": 86_400_000, "max_body_bytes": 65_536}
int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ttl_value = st.one_of(st.none(), int64, st.floats(allow_nan=False), st.text(max_size=12), st.lists(int64, max_size=2))
task_call = st.fixed_dictionaries({
    "name": st.sampled_from(["echo", "measure", "hold"]),
    "size": st.integers(min_value=0, max_value=40_000),
    "times": st.integers(min_value=-3, max_value=40),
    "ttl": ttl_value,
    "hint": st.sampled_from(["object", "missing", "junk"]),
})


@pytest.fixture(scope="module")
def fuzz_tasks_app() -> McpApp:
    return app_with(**BOUNDS)


async def _fuzz_round(app: McpApp, calls: list[dict[str, Any]]) -> None:
    async with McpTestClient(app, era="legacy") as c:
        for call in calls:
            text = "f" * call["size"]
            args: dict[str, Any] = {"echo": {"text": text, "times": call["times"]}, "measure": {"blob": text},
                                    "hold": {"seconds": 0}}[call["name"]]
            params: dict[str, Any] = {"name": call["name"], "arguments": args}
            if call["hint"] == "object":
                params["task"] = {} if call["ttl"] is None else {"ttl": call["ttl"]}
            elif call["hint"] == "junk":
                params["task"] = call["ttl"]
            r = await c.post(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
            assert r.status_code != 500 and r.status_code < 600
            if r.status_code == 200 and r.headers.get("content-type", "").startswith("application/json"):
                data = orjson.loads(r.content)
                if "error" in data:
                    assert data["error"]["code"] in (-32602, -32003, -32600, -32000), data
    store = app.stores.tasks
    assert isinstance(store, MemoryTaskStore)
    for account, total in store._bytes.items():
        assert total <= BOUNDS["tasks_max_bytes_per_identity"], (account, total)
        assert len(store._kept.get(account, ())) <= BOUNDS["tasks_max_kept_per_identity"]
    for st_ in store._tasks.values():
        assert st_.size <= BOUNDS["tasks_max_task_bytes"]
        assert st_.meta.ttl_ms <= BOUNDS["tasks_max_ttl_ms"]


@settings(max_examples=max(FUZZ_EXAMPLES, 20), deadline=None, suppress_health_check=list(HealthCheck))
@given(calls=st.lists(task_call, min_size=1, max_size=8))
def test_fuzzed_task_arguments_and_ttls_keep_every_bound(fuzz_tasks_app: McpApp, calls: list[dict[str, Any]]) -> None:
    asyncio.run(_fuzz_round(fuzz_tasks_app, calls))
