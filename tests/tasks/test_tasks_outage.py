"""Tasks while their Redis is away: both eras answer ``tasks/get`` and a task tool's
``tools/call`` with HTTP 503, ``Retry-After`` and the JSON-RPC error ``-32000``: a protocol
error the client retries, never an ``isError`` result the model would read, with or without
middleware in the stack."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpcore import Call, CallNext, McpApp, Middleware, Settings, tool
from mcpcore.testing import McpTestClient
from tests.storage.conftest import redis_server

pytestmark = pytest.mark.anyio

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@tool(task="optional")
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "done"


class PassThrough(Middleware):
    """A layer that hooks tools/call and changes nothing."""

    async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
        return await call_next(call)


@pytest.fixture
def doomed_redis(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    with redis_server(tmp_path / "redis.log") as (url, proc):
        yield url, proc


async def _post(c: McpTestClient, method: str, params: dict[str, Any], rid: int) -> Any:
    if c.era == "modern":
        params = c.envelope(params)
    return await c.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, c.headers(method, params))


def _is_retryable_outage(r: Any) -> bool:
    body = orjson.loads(r.content)
    return (r.status_code == 503 and r.headers.get("retry-after") is not None and "result" not in body
            and body["error"]["code"] == -32000)


@pytest.mark.parametrize("layers", [[], [PassThrough()]], ids=["bare", "middleware"])
async def test_tasks_during_a_redis_outage_are_503_in_both_eras(doomed_redis: tuple[str, Any],
                                                                layers: list[Middleware]) -> None:
    url, proc = doomed_redis
    app = McpApp("outage", "1.0.0", tools=[slow], middleware=layers,
                 settings=Settings.from_env({}, session_store="redis", redis_url=url))
    await app.startup()
    try:
        async with McpTestClient(app, era="modern", capabilities=TASKS) as modern, \
                McpTestClient(app, capabilities=TASKS) as legacy:
            created = await modern.call_tool("slow", {"seconds": 30})
            modern_id = created["taskId"]
            legacy_id = (await legacy.request("tools/call", {"name": "slow", "arguments": {"seconds": 30},
                                                             "task": {"ttl": 60_000}}))["task"]["taskId"]
            proc.terminate()
            proc.wait(10)
            answers = {
                "modern tasks/get": await _post(modern, "tasks/get", {"taskId": modern_id}, 1),
                "modern tools/call": await _post(modern, "tools/call", {"name": "slow", "arguments": {"seconds": 1}},
                                                 2),
                "legacy tasks/get": await _post(legacy, "tasks/get", {"taskId": legacy_id}, 3),
                "legacy tools/call": await _post(legacy, "tools/call", {"name": "slow", "arguments": {"seconds": 1},
                                                                        "task": {"ttl": 60_000}}, 4),
            }
            wrong = [f"{what}: {r.status_code} {dict(r.headers)} {r.text[:300]}" for what, r in answers.items()
                     if not _is_retryable_outage(r)]
            assert not wrong, "\n".join(wrong)
    finally:
        await app.shutdown()
