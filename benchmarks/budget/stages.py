"""Where a request's instructions go: inclusive instructions per request of each stage of a
``tools/call``, counted in process under callgrind as :mod:`benchmarks.budget` counts the whole.

    .venv/bin/python -m benchmarks.budget.stages                    # call_2026 and call_2025
    .venv/bin/python -m benchmarks.budget.stages --cases call_2026 --requests 400

Each stage is a function on the request's way (:data:`STAGES`). The child process, run under
``valgrind --tool=callgrind --collect-atstart=no``, wraps one stage at a time so that callgrind
collects only while it runs (``CALLGRIND_TOGGLE_COLLECT`` at its entry and at its exit), sends
the case's requests (the budget driver's, after a warm-up) and dumps the count; then the next
stage. What the wrapper itself costs inside the collected window is measured around a function
that does nothing and subtracted per call. Stages nest (the dispatcher includes invoke, which
includes validation, the handler and shaping), so every figure includes what runs inside it.
``request`` is the whole request as the budget counts it (the driver's loop included), and
``asgi limit`` the pure-ASGI endpoint's, from the same run.

A stage that is not on a tree's way (a checkout before a function existed) is left out. Works on
an older checkout too: ``PYTHONPATH=<checkout> .venv/bin/python -m benchmarks.budget.stages``
with this file copied there.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import importlib
import inspect
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ..inprocess import call, load_app
from .driver import FIRST_ID, REQUESTS, body, headers_for

MARKS_C = Path(__file__).with_name("marks.c")
TOGGLE_C = '#include <valgrind/callgrind.h>\nvoid stage_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }\n' \
           'void stage_zero(void) { CALLGRIND_ZERO_STATS; }\n' \
           'void stage_dump(const char *l) { CALLGRIND_DUMP_STATS_AT(l); }\n'
WARMUP = 150

# (label, where: "module:attribute" or "module:Class.method"), in the order the request meets them.
STAGES: list[tuple[str, str]] = [
    ("app (McpApp.__call__)", "mcpcore.app:McpApp.__call__"),
    ("door layers (host and origin guard; auth)", "door:layers"),
    ("body: read, JSON parse, limits", "door:body"),
    ("era: 2026-07-28 request", "mcpcore.transports.http.modern:ModernPost.serve"),
    ("era: 2025 session request", "mcpcore.transports.http.sessions:SessionPost.serve"),
    ("  session lookup (2025)", "mcpcore.transports.http.sessions:SessionPost.lookup"),
    ("  intake (2026 Inbound)", "mcpcore.transports.http.modern:modern_inbound"),
    ("  intake (2025 Inbound)", "mcpcore.transports.http.sessions:session_inbound"),
    ("  header checks (2026)", "mcpcore.transports.http.modern:check_headers"),
    ("  dispatcher (Dispatcher.handle)", "mcpcore.server.dispatcher:Dispatcher.handle"),
    ("    invoke", "mcpcore.server.tools:invoke"),
    ("      validation (pydantic)", "validation"),
    ("      handler (the echo function)", "handler"),
    ("      shaping (the tool's result)", "shaping"),
    ("    encoding: 2026 result fields", "mcpcore.server.dispatcher:Dispatcher._modern_result"),
    ("    encoding: JSON-RPC response", "mcpcore.server.dispatcher:result_response"),
    ("  answer (HttpExchange.finish)", "mcpcore.transports.exchange:HttpExchange.finish"),
]


class _Counted:
    """A stage's wrapper: collection on while it runs, and how many times it ran."""

    def __init__(self, toggle: Callable[[], None]) -> None:
        self.toggle = toggle
        self.calls = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        toggle = self.toggle
        if inspect.iscoroutinefunction(fn):
            async def async_stage(*args: Any, **kwargs: Any) -> Any:
                self.calls += 1
                toggle()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    toggle()
            return async_stage

        def stage(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            toggle()
            try:
                return fn(*args, **kwargs)
            finally:
                toggle()
        return stage


class _Validator:
    """A validator whose ``validate_python`` is the wrapped one (for an ``ArgsPlan`` of a tree
    without pipelines)."""

    def __init__(self, validate_python: Callable[[Any], Any]) -> None:
        self.validate_python = validate_python


def _nothing() -> None:
    return None


async def _nothing_async() -> None:
    return None


def _door(where: str, counter: _Counted) -> Callable[[], None] | None:
    """The door layers are bound once by the endpoint (``HttpTransport.doors``, ``read_body``):
    wrap them on the endpoint object."""
    endpoints = [o for o in gc.get_objects() if type(o).__name__ == "HttpTransport"]
    if len(endpoints) != 1:
        return None
    ep = endpoints[0]
    if where == "door:body":
        old = ep.read_body
        ep.read_body = counter.wrap(old)
        return lambda: setattr(ep, "read_body", old)
    old_doors = ep.doors
    ep.doors = tuple(counter.wrap(d) for d in old_doors)
    return lambda: setattr(ep, "doors", old_doors)


def _patch(where: str, app: Any, counter: _Counted) -> Callable[[], None] | None:
    """Wrap the stage ``where``; the function that undoes it (``None``: not on this tree)."""
    if where.startswith("door:"):
        return _door(where, counter)
    tool = app.registry.tools["echo"] if hasattr(app, "registry") else None
    if where in ("validation", "handler", "shaping"):
        if tool is None:
            return None
        pipe = getattr(tool, "pipeline", None)
        if where == "shaping":
            if pipe is None:  # a tree without pipelines: the family's method
                return _patch("mcpcore.server.tools:ToolFamily.shape", app, counter)
            old_shape = pipe.shape
            pipe.shape = counter.wrap(old_shape)
            return lambda: setattr(pipe, "shape", old_shape)
        if where == "handler":
            owner: Any = pipe if pipe is not None else tool
            old = owner.direct
            owner.direct = counter.wrap(old)
            return lambda: setattr(owner, "direct", old)
        if pipe is not None:
            old_v = pipe.validate_python
            pipe.validate_python = counter.wrap(old_v)
            return lambda: setattr(pipe, "validate_python", old_v)
        plan = tool.args
        old_plan_v = plan.validator
        object.__setattr__(plan, "validator", _Validator(counter.wrap(old_plan_v.validate_python)))
        return lambda: object.__setattr__(plan, "validator", old_plan_v)
    module_name, _, attr = where.partition(":")
    module = importlib.import_module(module_name)
    owner, _, name = attr.rpartition(".")
    target: Any = getattr(module, owner) if owner else module
    old_fn = getattr(target, name, None)
    if old_fn is None:
        return None
    setattr(target, name, counter.wrap(old_fn))
    return lambda: setattr(target, name, old_fn)


async def _send(app: Any, case: str, headers: list[tuple[bytes, bytes]], ids: Any, n: int) -> None:
    req = REQUESTS[case]
    bodies = [body(req, next(ids)) for _ in range(n)]  # built before: not the request's cost
    for b in bodies:
        sent = await call(app, b, headers)
        if sent[0]["status"] != 200:
            raise RuntimeError(f"{case}: HTTP {sent[0]['status']}: {sent}")


async def _child(case: str, requests: int, lib: Any) -> dict[str, Any]:
    toggle = lib.stage_toggle
    out: dict[str, Any] = {}
    ids = iter(range(FIRST_ID, FIRST_ID + 10_000_000))
    for server in ("asgi", "mcpcore"):
        app = load_app(server)
        headers = await headers_for(app, REQUESTS[case])
        await _send(app, case, headers, ids, WARMUP)
        for t in asyncio.all_tasks():  # the app's sweeper: not a request's cost
            if t is not asyncio.current_task():
                t.cancel()
        gc.collect()
        gc.disable()
        bodies = [body(REQUESTS[case], next(ids)) for _ in range(requests)]
        lib.stage_zero()
        toggle()
        for b in bodies:
            await call(app, b, headers)
        toggle()
        label = "request" if server == "mcpcore" else "asgi limit"
        lib.stage_dump(label.encode())
        out[label] = 1
        gc.enable()
    noop = _Counted(toggle)
    wrapped_sync, wrapped_async = noop.wrap(_nothing), noop.wrap(_nothing_async)
    lib.stage_zero()
    for _ in range(requests):
        wrapped_sync()
    lib.stage_dump(b"overhead:sync")
    lib.stage_zero()
    for _ in range(requests):
        await wrapped_async()
    lib.stage_dump(b"overhead:async")
    for label, where in STAGES:
        counter = _Counted(toggle)
        undo = _patch(where, app, counter)
        if undo is None:
            continue
        try:
            await _send(app, case, headers, ids, 20)  # respecialise the wrapped call sites
            counter.calls = 0
            gc.disable()
            lib.stage_zero()
            await _send(app, case, headers, ids, requests)
            lib.stage_dump(f"stage:{label}".encode())
            gc.enable()
        finally:
            undo()
        if counter.calls:
            kind = {"validation": "sync", "handler": "async", "shaping": "sync", "door:layers": "sync",
                    "door:body": "async"}.get(where)
            if kind is None:
                module_name, _, attr = where.partition(":")
                owner, _, name = attr.rpartition(".")
                target: Any = importlib.import_module(module_name)
                target = getattr(target, owner) if owner else target
                kind = "async" if inspect.iscoroutinefunction(getattr(target, name)) else "sync"
            out[f"stage:{label}"] = {"calls": counter.calls, "kind": kind}
    return out


def _totals(workdir: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for path in workdir.glob("callgrind.out*"):
        text = path.read_text()
        label = re.search(r"^desc: Trigger: Client Request: (.+)$", text, re.M)
        totals = re.search(r"^totals: (\d+)", text, re.M)
        if label and totals:
            found[label.group(1).strip()] = int(totals.group(1))
    return found


def count(case: str, requests: int) -> list[tuple[str, float]]:
    """``(stage, instructions per request)`` for ``case``, ``request`` and ``asgi limit`` first."""
    with tempfile.TemporaryDirectory(prefix="mcpcore-stages-") as tmp:
        work = Path(tmp)
        (work / "toggle.c").write_text(TOGGLE_C)
        so = work / "toggle.so"
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(so), str(work / "toggle.c")], check=True)
        env = {**os.environ, "PYTHONHASHSEED": "0", "MCP_LOG_LEVEL": "warning"}
        proc = subprocess.run(["valgrind", "-q", "--tool=callgrind", "--collect-atstart=no",
                               f"--callgrind-out-file={work / 'callgrind.out'}", sys.executable, "-m",
                               "benchmarks.budget.stages", "--child", case, str(requests), str(so)],
                              env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"the counting process failed:\n{proc.stderr[-3000:]}")
        calls = orjson.loads(proc.stdout.strip().splitlines()[-1])
        totals = _totals(work)
    over = {"sync": totals["overhead:sync"] / requests, "async": totals["overhead:async"] / requests}
    rows = [("request", totals["request"] / requests), ("asgi limit", totals["asgi limit"] / requests)]
    for label, _ in STAGES:
        key = f"stage:{label}"
        if key in calls and key in totals:
            info = calls[key]
            per_call = info["calls"] / requests
            rows.append((label, totals[key] / requests - over[info["kind"]] * per_call))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--cases", default="call_2026,call_2025")
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        import logging

        import uvloop

        logging.disable(logging.WARNING)
        case, requests, so = args.child
        out = uvloop.run(_child(case, int(requests), ctypes.CDLL(so)))
        sys.stdout.write(orjson.dumps(out).decode() + "\n")
        return 0
    cases = [c for c in args.cases.split(",") if c]
    table = {case: dict(count(case, args.requests)) for case in cases}
    labels = list(dict.fromkeys(label for rows in table.values() for label in rows))
    print("| stage (inclusive) | " + " | ".join(cases) + " |")
    print("|---|" + "---:|" * len(cases))
    for label in labels:
        cells = [f"{table[c][label]:,.0f}" if label in table[c] else "" for c in cases]
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
