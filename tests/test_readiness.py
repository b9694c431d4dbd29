"""``/readyz`` checks what requests need of Redis, a write, not a ping: a demoted (read-only)
primary makes the instance unready; the answer is cached briefly so probes cost Redis little."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from mcpcore.testing import McpTestClient

from .conftest import example_app
from .storage.conftest import redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def two_redis(tmp_path: Path) -> Iterator[tuple[str, str]]:
    with redis_server(tmp_path / "a.log") as (a, _), redis_server(tmp_path / "b.log") as (b, _):
        yield a, b


async def _ready(c: McpTestClient) -> tuple[int, dict[str, str]]:
    r = await c.http.get(c.url.replace("/mcp", "/readyz"))
    return r.status_code, r.json()["checks"]


async def _until(c: McpTestClient, status: int) -> dict[str, str]:
    for _ in range(60):
        got, checks = await _ready(c)
        if got == status:
            return checks
        await asyncio.sleep(0.1)
    raise AssertionError(f"/readyz stayed {got}: {checks}")


async def test_a_read_only_primary_makes_the_instance_unready(two_redis: tuple[str, str]) -> None:
    primary, other = two_redis
    app = example_app(session_store="redis", redis_url=primary, storage_provider="redis")
    admin = aioredis.Redis.from_url(primary)
    other_port = other.rsplit(":", 1)[1].split("/")[0]
    async with aioredis.Redis.from_url(other) as source:  # the sync goes over the socket, never to a file
        await source.config_set("repl-diskless-sync", "yes")
        await source.config_set("repl-diskless-sync-delay", "0")
    await admin.config_set("repl-diskless-load", "swapdb")
    try:
        async with McpTestClient(app) as c:
            assert await _ready(c) == (200, {"state": "ok", "sessions": "ok", "bus": "ok"})
            await admin.execute_command("REPLICAOF", "127.0.0.1", other_port)  # demoted: writes refused
            assert await admin.ping()  # a ping still answers
            checks = await _until(c, 503)
            assert checks["sessions"] != "ok" and checks["state"] != "ok", checks
            await admin.execute_command("REPLICAOF", "NO", "ONE")  # promoted again
            await _until(c, 200)
    finally:
        await admin.execute_command("REPLICAOF", "NO", "ONE")
        await admin.aclose()


async def _probes(admin: aioredis.Redis) -> int:
    """PINGs and SETs the server has answered so far."""
    stats = await admin.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{cmd}", {}).get("calls", 0)) for cmd in ("ping", "set"))


async def test_probes_in_a_burst_cost_redis_one_check(two_redis: tuple[str, str]) -> None:
    primary, _ = two_redis
    app = example_app(session_store="redis", redis_url=primary)
    admin = aioredis.Redis.from_url(primary)
    try:
        async with McpTestClient(app) as c:
            await _ready(c)
            before = await _probes(admin)
            answers = await asyncio.gather(*(_ready(c) for _ in range(50)))
            after = await _probes(admin)
        assert all(status == 200 for status, _ in answers)
        assert after - before <= 2, after - before
    finally:
        await admin.aclose()
