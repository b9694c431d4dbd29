"""Sentinel failover under load: two instances behind a round-robin client keep serving while the
primary is switched over (``SENTINEL FAILOVER``) and then killed; no 500, no hung request, 503s
only during each switch, and every session created (and replicated) before it still works."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
import httpx
import orjson
import pytest

from mcpcore.testing import McpTestClient
from tests.redis_topologies import MASTER, SentinelSet, _ask

from .harness import cluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HUNG_S = 8.0  # a request slower than this counts as hung (the client's timeout is longer)
SETTLE_S = 1.5  # after the sentinels name the new primary, how long 503s may still be answered


@dataclass
class Outcome:
    at: float
    status: int  # HTTP status; 0: no answer (the client's timeout or a dropped connection)
    took: float
    complete: bool  # a 200 carried the JSON-RPC result
    error: str = ""


@dataclass
class Load:
    outcomes: list[Outcome] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)


def _call(rid: int) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                         "params": {"name": "test_tool_with_logging", "arguments": {}}})


def _complete(resp: httpx.Response, rid: int) -> bool:
    text = resp.text
    for line in text.splitlines():
        if line.startswith("data: ") or line.startswith("{"):
            try:
                msg = orjson.loads(line[6:] if line.startswith("data: ") else line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(msg, dict) and msg.get("id") == rid and "result" in msg:
                return True
    return False


async def _worker(n: int, urls: list[str], clients: list[McpTestClient], load: Load, http: httpx.AsyncClient) -> None:
    rid = n * 1_000_000
    while not load.stop.is_set():
        rid += 1
        client = clients[rid % len(clients)]
        url = urls[rid % len(urls)]
        fresh = rid % 7 == 0  # now and then a new session: the create script runs too
        started = time.monotonic()
        try:
            if fresh:
                body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}})
                resp = await http.post(url, content=body, headers={"content-type": "application/json",
                                                                   "accept": "application/json, text/event-stream"})
            else:
                resp = await http.post(url, content=_call(rid), headers=client.headers())
            status = resp.status_code
            complete = status != 200 or _complete(resp, rid)
            if status == 503:
                assert resp.headers.get("retry-after"), "a 503 without Retry-After"
        except httpx.HTTPError as exc:
            status, complete, error = 0, False, f"{'initialize' if fresh else 'call'}: {exc!r}"
        else:
            error = "" if complete else f"incomplete: {resp.text[-300:]!r}"
        load.outcomes.append(Outcome(started, status, time.monotonic() - started, complete, error))
        await asyncio.sleep(0.01)


async def _primary_changes(topo: SentinelSet, old: int, timeout: float = 20) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ports = {topo.primary_port(i) for i in range(len(topo.sentinel_ports))}
        if len(ports) == 1 and old not in ports and None not in ports:
            return next(iter(ports))  # type: ignore[return-value]
        await asyncio.sleep(0.05)
    raise AssertionError("the sentinels did not agree on a new primary")


async def _replicated(topo: SentinelSet, primary: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not topo.replica_in_sync(primary):
        assert time.monotonic() < deadline, "the replica did not catch up"
        await asyncio.sleep(0.05)
    reply = _ask(primary, "WAIT", "1", "2000")  # everything written so far is on the replica
    assert reply.startswith(":1"), reply


async def test_sentinel_failover_under_load(tmp_path: Path) -> None:
    with cluster(tmp_path, n=2, topology="sentinel") as cl:
        topo = cl.topology
        assert isinstance(topo, SentinelSet)
        urls = cl.urls
        clients = []
        for i in range(6):
            c = McpTestClient(url=urls[i % 2], timeout=HUNG_S + 5)
            await c.__aenter__()
            await c.request("logging/setLevel", {"level": "info"})
            clients.append(c)
        try:
            first = topo.primary_port()
            assert first is not None
            await _replicated(topo, first)
            load = Load()
            windows: list[tuple[float, float]] = []
            async with httpx.AsyncClient(timeout=HUNG_S + 5) as http:
                workers = [asyncio.create_task(_worker(n, urls, clients, load, http)) for n in range(4)]
                await asyncio.sleep(1.0)

                began = time.monotonic()  # 1: a planned switch
                assert _ask(topo.sentinel_ports[0], "SENTINEL", "FAILOVER", MASTER).startswith("+OK")
                second = await _primary_changes(topo, first)
                windows.append((began, time.monotonic() + SETTLE_S))
                await asyncio.sleep(SETTLE_S + 1.0)
                await _replicated(topo, second)

                began = time.monotonic()  # 2: the primary dies
                os.kill(topo.procs[second].pid, signal.SIGKILL)
                third = await _primary_changes(topo, second)
                assert third == first
                windows.append((began, time.monotonic() + SETTLE_S))
                await asyncio.sleep(SETTLE_S + 1.0)
                load.stop.set()
                await asyncio.gather(*workers)

            outcomes = load.outcomes
            assert len(outcomes) > 50
            statuses = {o.status for o in outcomes}
            assert statuses <= {200, 503}, f"unexpected statuses {_statuses(outcomes)}: {[(o.error, round(o.took, 2)) for o in outcomes if o.error][:5]}"
            assert max(o.took for o in outcomes) < HUNG_S
            assert all(o.complete for o in outcomes), "a 200 without its result"
            outside = [o for o in outcomes if o.status == 503 and not any(a <= o.at <= b for a, b in windows)]
            assert not outside, f"{len(outside)} 503s outside the switches"
            for n, (a, b) in enumerate(windows, 1):
                failed = [o.at for o in outcomes if o.status == 503 and a <= o.at <= b]
                span = (max(failed) - min(failed)) if failed else 0.0
                print(f"switch {n}: {len(failed)} 503s over {span:.2f} s; "
                      f"{sum(1 for o in outcomes if a <= o.at <= b)} requests in the window")

            for c in clients:  # created and replicated before both switches: all still there
                result = await c.call_tool("test_tool_with_logging")
                assert result["content"]
        finally:
            for c in clients:
                await c.__aexit__(None, None, None)


def _statuses(outcomes: list[Outcome]) -> dict[int, int]:
    out: dict[int, int] = {}
    for o in outcomes:
        out[o.status] = out.get(o.status, 0) + 1
    return out

