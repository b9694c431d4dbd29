"""Sentinel failover under load: two instances, four clients calling tools (answered over SSE,
so every call writes the event buffer) and opening sessions, while the primary is switched over
(``SENTINEL FAILOVER``) and then killed. No 500, no hung request, 503s (with ``Retry-After``)
only from requests in flight during a switch, and every session created and replicated before a
switch still works after both."""

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

HUNG_S = 8.0  # a request slower than this counts as hung (the client's own timeout is longer)
SETTLE_S = 1.5  # after the sentinels agree on the new primary, how long 503s may still be answered
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@dataclass
class Outcome:
    start: float
    end: float
    status: int  # HTTP status; 0: no answer (timeout or a dropped connection)
    error: str = ""  # why it is not a clean answer, if it is not
    session: str | None = None  # the session an initialize created


@dataclass
class Load:
    outcomes: list[Outcome] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)


def _has_result(text: str, rid: int) -> bool:
    for line in text.splitlines():
        if line.startswith(("data: ", "{")):
            try:
                msg = orjson.loads(line[6:] if line.startswith("data: ") else line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(msg, dict) and msg.get("id") == rid and "result" in msg:
                return True
    return False


async def _one(http: httpx.AsyncClient, url: str, client: McpTestClient, rid: int, fresh: bool) -> Outcome:
    start = time.monotonic()
    if fresh:  # a new session: the create script runs
        body = {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}}
        headers = JSON
    else:
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "test_tool_with_logging", "arguments": {}}}
        headers = client.headers()
    try:
        resp = await http.post(url, content=orjson.dumps(body), headers=headers)
    except httpx.HTTPError as exc:
        return Outcome(start, time.monotonic(), 0, f"{body['method']}: {exc!r}")
    out = Outcome(start, time.monotonic(), resp.status_code)
    if resp.status_code == 503 and not resp.headers.get("retry-after"):
        out.error = "a 503 without Retry-After"
    elif resp.status_code == 200 and not _has_result(resp.text, rid):
        out.error = f"a 200 without its result: {resp.text[-200:]!r}"
    elif resp.status_code == 200 and fresh:
        out.session = resp.headers.get("mcp-session-id")
    return out


async def _worker(n: int, urls: list[str], clients: list[McpTestClient], load: Load, http: httpx.AsyncClient) -> None:
    rid = n * 1_000_000
    while not load.stop.is_set():
        rid += 1
        load.outcomes.append(await _one(http, urls[rid % len(urls)], clients[rid % len(clients)], rid, rid % 7 == 0))
        await asyncio.sleep(0.01)


async def _new_primary(topo: SentinelSet, old: int, timeout: float = 20) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ports = {topo.primary_port(i) for i in range(len(topo.sentinel_ports))}
        if len(ports) == 1 and old not in ports and None not in ports:
            port = ports.pop()
            assert port is not None
            return port
        await asyncio.sleep(0.05)
    raise AssertionError("the sentinels did not agree on a new primary")


async def _replicated(topo: SentinelSet, primary: int, timeout: float = 20) -> None:
    """The replica is attached and has everything written so far (``WAIT``)."""
    deadline = time.monotonic() + timeout
    while not topo.replica_in_sync(primary):
        assert time.monotonic() < deadline, "the replica did not catch up"
        await asyncio.sleep(0.05)
    reply = _ask(primary, "WAIT", "1", "2000")
    assert reply.startswith(":1"), reply


async def _alive(http: httpx.AsyncClient, url: str, session: str) -> bool:
    r = await http.post(url, content=orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                        headers={**JSON, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})
    return r.status_code == 200


@pytest.mark.serial
async def test_sentinel_failover_under_load(tmp_path: Path) -> None:
    with cluster(tmp_path, n=2, topology="sentinel") as cl:
        topo = cl.topology
        assert isinstance(topo, SentinelSet)
        urls = cl.urls
        clients = [McpTestClient(url=urls[i % 2], timeout=HUNG_S + 5) for i in range(6)]
        for c in clients:
            await c.__aenter__()
            await c.request("logging/setLevel", {"level": "info"})
        try:
            first = topo.primary_port()
            assert first is not None
            await _replicated(topo, first)
            load = Load()
            windows: list[tuple[float, float]] = []
            checkpoints: list[float] = []  # everything answered before each was replicated
            async with httpx.AsyncClient(timeout=HUNG_S + 5) as http:
                workers = [asyncio.create_task(_worker(n, urls, clients, load, http)) for n in range(4)]
                await asyncio.sleep(1.0)
                checkpoints.append(time.monotonic())
                await _replicated(topo, first)

                began = time.monotonic()  # 1: a planned switch
                assert _ask(topo.sentinel_ports[0], "SENTINEL", "FAILOVER", MASTER).startswith("+OK")
                second = await _new_primary(topo, first)
                windows.append((began, time.monotonic() + SETTLE_S))
                await asyncio.sleep(SETTLE_S + 1.0)
                checkpoints.append(time.monotonic())
                await _replicated(topo, second)

                began = time.monotonic()  # 2: the primary dies
                os.kill(topo.procs[second].pid, signal.SIGKILL)
                third = await _new_primary(topo, second)
                assert third == first
                windows.append((began, time.monotonic() + SETTLE_S))
                await asyncio.sleep(SETTLE_S + 1.0)
                load.stop.set()
                await asyncio.gather(*workers)

                outcomes = load.outcomes
                assert len(outcomes) > 100
                bad = [(o.status, o.error, round(o.end - o.start, 2)) for o in outcomes
                       if o.error or o.status not in (200, 503)]
                assert not bad, f"{len(bad)} unclean answers, e.g. {bad[:3]}"
                assert max(o.end - o.start for o in outcomes) < HUNG_S

                def during(o: Outcome, w: tuple[float, float]) -> bool:
                    return o.start <= w[1] and o.end >= w[0]  # in flight at some point of the switch

                outside = [o for o in outcomes if o.status == 503 and not any(during(o, w) for w in windows)]
                assert not outside, f"{len(outside)} 503s outside the switches"
                for n, w in enumerate(windows, 1):
                    failed = [o for o in outcomes if o.status == 503 and during(o, w)]
                    span = max(o.end for o in failed) - min(o.start for o in failed) if failed else 0.0
                    print(f"switch {n}: {len(failed)} 503s of {sum(during(o, w) for o in outcomes)} requests in "
                          f"flight, over {span:.2f} s")

                # Every session created and replicated before a switch still works after both.
                replicated = [o.session for o in outcomes if o.session is not None and o.end < checkpoints[-1]
                              and not during(o, windows[0])]
                assert len(replicated) >= 3
                for n, session in enumerate(replicated):
                    assert await _alive(http, urls[n % 2], session), "a replicated session was lost"
                in_switch = [o.session for o in outcomes if o.session is not None and during(o, windows[0])]
                lost = [s for n, s in enumerate(in_switch) if not await _alive(http, urls[n % 2], s)]
                print(f"sessions created during the planned switch: {len(in_switch)}, lost: {len(lost)}")
            for c in clients:
                assert (await c.call_tool("test_tool_with_logging"))["content"]
        finally:
            for c in clients:
                await c.__aexit__(None, None, None)
