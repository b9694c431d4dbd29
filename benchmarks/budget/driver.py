"""The requests the instruction budget counts, sent to the ASGI apps in process under callgrind.

    valgrind --tool=callgrind --instr-atstart=no ... python -m benchmarks.budget.driver MARKS_SO GROUP

Run by :mod:`benchmarks.budget.count`, one process per group of :data:`GROUPS`. For each case of
its group the driver opens a 2025 session when the request needs one (not counted), sends the
request once and checks the answer, and warms up with :data:`WARMUP` requests. Then it counts
:data:`LOW` requests and :data:`HIGH` requests in :data:`SLICES` slices: before each slice it
clears CPython's method cache, which gives every type a new version tag, and warms up again
(:data:`SLICE_WARMUP` requests), then switches callgrind's instrumentation on, sends
``LOW / SLICES`` requests and ``HIGH / SLICES`` requests, each run ended by a labelled dump of
the counters (``<case>/low<i>``, ``<case>/high<i>``), and switches it off. One request costs
(sum of the high runs - sum of the low runs) / (HIGH - LOW): what the loop and the dumps cost is
the same in both runs and cancels.

Why the slices: CPython's method cache is indexed by a type's version tag and the address of the
attribute's name, and 3.11's specialised instructions guard on version tags, so what a request
costs depends a little on the heap's layout, which any change to any imported module shifts:
counted once after start-up, the same code moved by 0.3 to 1.3 % between layouts. Summed over
five draws of version tags, the same layouts agree within 0.1 %.

The cyclic collector is frozen and off while counting, so no collection lands in one run and not
in the other; the cycles a request leaves behind are counted instead (``gc.collect()`` after the
runs) and reported. The app's background tasks (its session sweeper) are ended before counting:
when they wake up depends on wall time, which valgrind on a loaded machine stretches, and a count
must not.

Every request is the benchmark's (``benchmarks/harness/wire.py``) with a fresh id of the same
length, sent through :func:`benchmarks.inprocess.call` on uvloop. Prints one JSON line: per case,
the cycles per request and the background tasks ended.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import sys
from dataclasses import dataclass
from typing import Any

import orjson

from ..harness.config import ACCEPT, DOC, LEGACY, MODERN, TEXT
from ..inprocess import App, call, load_app

WARMUP, LOW, HIGH = 200, 200, 1200
SLICES, SLICE_WARMUP = 5, 100  # LOW and HIGH are counted in this many slices, each after its own warm-up
LOOP_TURNS = 3  # turns of the event loop after a run: work a request deferred (call_soon, a task) runs in it
FIRST_ID = 100_000  # every id has six digits: the bodies of one case are all of one length


@dataclass(frozen=True)
class Request:
    """One benchmark request: its method, params, era and what its answer must hold."""

    method: str
    params: dict[str, Any]
    wire: str  # "modern" (2026-07-28, sessionless) or "legacy" (a 2025-11-25 session)
    expect: str  # "echo" | "tools" | "doc"
    name: str | None = None  # the Mcp-Name header of a 2026-07-28 request


ECHO = {"name": "echo", "arguments": {"text": TEXT}}
REQUESTS = {
    "call_2026": Request("tools/call", ECHO, "modern", "echo", "echo"),
    "call_2025": Request("tools/call", ECHO, "legacy", "echo"),
    "tools_list": Request("tools/list", {}, "modern", "tools"),
    "resources_read": Request("resources/read", {"uri": "bench://doc"}, "modern", "doc", "bench://doc"),
}


@dataclass(frozen=True)
class Case:
    """A request counted on one server (a module of ``benchmarks/servers``, by its inprocess key)."""

    key: str  # the budget's name for it
    server: str
    request: str


LIMIT = "asgi"  # the pure-ASGI endpoint every count is set against
CASES = [
    Case("call_2026", "mcpcore", "call_2026"),
    Case("call_2025", "mcpcore", "call_2025"),
    Case("tools_list", "mcpcore", "tools_list"),
    Case("resources_read", "mcpcore", "resources_read"),
    Case("layers_2026", "mcpcore_layers", "call_2026"),
]
LIMIT_CASES = [Case(f"{LIMIT}:{r}", LIMIT, r) for r in REQUESTS]
# Two processes of about the same length, for two cores. Which case runs after which shapes the
# heap a little, so the grouping is part of the measurement: change it and set the budgets anew.
GROUPS = {"mcpcore": CASES[:4], "layers-limit": [CASES[4], *LIMIT_CASES]}


def body(req: Request, rid: int) -> bytes:
    """The JSON-RPC request ``req`` with id ``rid`` (2026-07-28 requests carry their ``_meta``)."""
    params = dict(req.params)
    if req.wire == "modern":
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": {}}
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": req.method, "params": params})


BASE = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"), (b"accept", ACCEPT.encode())]


async def headers_for(app: App, req: Request) -> list[tuple[bytes, bytes]]:
    """The request's headers; for a 2025 request, after opening a session on ``app``."""
    if req.wire == "modern":
        out = [*BASE, (b"mcp-protocol-version", MODERN.encode()), (b"mcp-method", req.method.encode())]
        return [*out, (b"mcp-name", req.name.encode())] if req.name else out
    init = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    sent = await call(app, init, list(BASE))
    sid = dict(sent[0]["headers"]).get(b"mcp-session-id")
    if sent[0]["status"] != 200 or not sid:
        raise RuntimeError(f"initialize answered HTTP {sent[0]['status']} without a session: {sent}")
    out = [*BASE, (b"mcp-protocol-version", LEGACY.encode()), (b"mcp-session-id", sid)]
    done = await call(app, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', out)
    if done[0]["status"] not in (200, 202):
        raise RuntimeError(f"notifications/initialized answered HTTP {done[0]['status']}")
    return out


def check(req: Request, sent: list[dict[str, Any]]) -> str | None:
    """What is wrong with one answer (None: it is the right one)."""
    if not sent or sent[0].get("status") != 200:
        return f"HTTP {sent[0].get('status') if sent else None}: {sent}"
    try:
        msg = orjson.loads(b"".join(m.get("body", b"") for m in sent[1:]))
        result = msg["result"]
        if req.expect == "echo":
            ok = result["content"][0]["text"] == TEXT and not result.get("isError")
        elif req.expect == "tools":
            ok = {"echo", "echo_logged"} <= {t["name"] for t in result["tools"]}
        else:
            ok = result["contents"][0]["text"] == DOC
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        ok = False
    return None if ok else f"wrong answer: {sent}"


async def send_all(app: App, bodies: list[bytes], headers: list[tuple[bytes, bytes]]) -> int:
    """Send every body in turn, then turn the loop :data:`LOOP_TURNS` times; how many were not
    answered 200. The loop does not turn between requests: a loop turn is the server's work
    (about 8,500 instructions on uvloop), not the app's, and what the app defers runs in the
    turns at the end, inside the counted run."""
    failed = 0
    for b in bodies:
        sent = await call(app, b, headers)
        if sent[0]["status"] != 200:
            failed += 1
    for _ in range(LOOP_TURNS):
        await asyncio.sleep(0)
    return failed


def background() -> list[asyncio.Task[Any]]:
    """Every task of the loop but the driver's."""
    mine = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t is not mine]


async def stop_background() -> list[str]:
    """End the app's background tasks (its session sweeper, every 60 s): when one wakes up would
    depend on how fast valgrind runs on a loaded machine, and it is not a request's cost. Their names."""
    tasks = background()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return sorted(t.get_coro().__qualname__ for t in tasks)  # type: ignore[union-attr]


async def count_case(case: Case, marks: ctypes.CDLL) -> dict[str, Any]:
    """One case: check, warm up, then the counted slices, each run closed by a labelled dump."""
    app = load_app(case.server)
    req = REQUESTS[case.request]
    headers = await headers_for(app, req)
    problem = check(req, await call(app, body(req, FIRST_ID), headers))
    if problem:
        raise RuntimeError(f"{case.key}: {problem}")
    ids = iter(range(FIRST_ID + 1, FIRST_ID + 2 + WARMUP + SLICES * SLICE_WARMUP + LOW + HIGH))
    warm, low, high = ([body(req, next(ids)) for _ in range(n)] for n in (WARMUP, LOW, HIGH))
    rewarm = [[body(req, next(ids)) for _ in range(SLICE_WARMUP)] for _ in range(SLICES)]
    failed = await send_all(app, warm, headers)
    stopped = await stop_background()
    gc.collect()
    gc.freeze()
    gc.disable()
    lo, hi = LOW // SLICES, HIGH // SLICES
    for i in range(SLICES):
        sys._clear_type_cache()  # new version tags: another draw of the method cache's collisions
        failed += await send_all(app, rewarm[i], headers)
        marks.budget_start()
        marks.budget_zero()
        failed += await send_all(app, low[i * lo:(i + 1) * lo], headers)
        marks.budget_dump(f"{case.key}/low{i}".encode())
        failed += await send_all(app, high[i * hi:(i + 1) * hi], headers)
        marks.budget_dump(f"{case.key}/high{i}".encode())
        marks.budget_stop()
    left = sorted(t.get_coro().__qualname__ for t in background())  # type: ignore[union-attr]
    gc.enable()
    cycles = gc.collect()
    gc.unfreeze()
    if left:
        raise RuntimeError(f"{case.key}: tasks still running after the counted requests (not counted): {left}")
    if failed:
        raise RuntimeError(f"{case.key}: {failed} counted requests not answered 200")
    last = check(req, await call(app, body(req, next(ids)), headers))
    if last:
        raise RuntimeError(f"{case.key} after the counted runs: {last}")
    return {"cycles_per_request": cycles / (LOW + HIGH), "stopped": stopped}


async def run_group(cases: list[Case], marks: ctypes.CDLL) -> dict[str, Any]:
    return {case.key: await count_case(case, marks) for case in cases}


def main(argv: list[str]) -> int:
    """``MARKS_SO GROUP``: count the group's cases; one JSON line on stdout. ``--prepare``: only
    import what the groups import (so that every module's bytecode is cached before a count)."""
    import uvloop

    logging.disable(logging.WARNING)  # the startup warnings of an app without keys
    if argv == ["--prepare"]:
        for case in (c for cases in GROUPS.values() for c in cases):
            load_app(case.server)
        return 0
    marks_so, group = argv
    marks = ctypes.CDLL(marks_so)
    out = uvloop.run(run_group(GROUPS[group], marks))
    sys.stdout.write(orjson.dumps(out).decode() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
