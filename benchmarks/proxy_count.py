"""Instructions a gateway spends per proxied ``tools/call``, counted under callgrind (issue 31).

    .venv/bin/python -m benchmarks.proxy_count            # both eras
    .venv/bin/python -m benchmarks.proxy_count --era modern

The echo server runs as a real backend (uvicorn, not counted); the gateway app of
``benchmarks/servers/mcpcore_proxy.py`` runs in a valgrind process and is called in process (as
:mod:`benchmarks.budget` calls the direct app), so the count is the gateway's own work per call:
the app's dispatch, the mount, and the backend client (building, sending and reading the
backend's HTTP request; the kernel's part of the socket calls is not counted). The direct echo
app is counted in the same process, on the same requests, for comparison. One request costs
(high run - low run) / (HIGH - LOW), each run summed over :data:`SLICES` slices, as in the budget.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .budget.count import CALLGRIND, build_marks, read_dumps, tools
from .budget.driver import REQUESTS, body, check, headers_for, send_all
from .inprocess import App, call, load_app
from .proxy_bench import bench_server

ROOT = Path(__file__).resolve().parents[1]
WARMUP, LOW, HIGH, SLICES = 100, 100, 600, 5


async def _count(name: str, app: App, request: str, marks: ctypes.CDLL) -> None:
    req = REQUESTS[request]
    headers = await headers_for(app, req)
    problem = check(req, await call(app, body(req, 100_000), headers))
    if problem:
        raise RuntimeError(f"{name}: {problem}")
    ids = iter(range(100_001, 200_000))
    failed = await send_all(app, [body(req, next(ids)) for _ in range(WARMUP)], headers)
    gc.collect()
    gc.freeze()
    gc.disable()
    lo, hi = LOW // SLICES, HIGH // SLICES
    for i in range(SLICES):
        sys._clear_type_cache()
        failed += await send_all(app, [body(req, next(ids)) for _ in range(20)], headers)
        low = [body(req, next(ids)) for _ in range(lo)]
        high = [body(req, next(ids)) for _ in range(hi)]
        marks.budget_start()
        marks.budget_zero()
        failed += await send_all(app, low, headers)
        marks.budget_dump(f"{name}/low{i}".encode())
        failed += await send_all(app, high, headers)
        marks.budget_dump(f"{name}/high{i}".encode())
        marks.budget_stop()
    gc.enable()
    gc.unfreeze()
    if failed:
        raise RuntimeError(f"{name}: {failed} requests not answered 200")


async def _child(marks_so: str, era: str) -> None:
    marks = ctypes.CDLL(marks_so)
    request = "call_2026" if era == "modern" else "call_2025"
    direct = load_app("mcpcore")
    await direct.startup()  # type: ignore[attr-defined]
    await _count(f"direct-{era}", direct, request, marks)
    sys.path.insert(0, str(ROOT / "benchmarks" / "servers"))
    import mcpcore_proxy

    gateway: Any = mcpcore_proxy.app
    await gateway.startup()
    proxied = REQUESTS[request]
    REQUESTS["proxied"] = type(proxied)(proxied.method, {**proxied.params, "name": "be_echo"}, proxied.wire,
                                        proxied.expect, "be_echo" if proxied.name else None)
    await _count(f"proxied-{era}", gateway, "proxied", marks)
    await gateway.shutdown()


def count(era: str, workdir: Path) -> dict[str, float]:
    """Instructions per call, direct and proxied, in ``era``."""
    valgrind, gcc = tools()
    marks = build_marks(gcc, workdir)
    with bench_server("mcpcore_echo", {"MCP_SESSION_MODE": "stateful"}) as backend:
        env = {**os.environ, "BENCH_BACKEND": backend, "BENCH_BACKEND_ERA": era, "MCP_LOG_LEVEL": "warning",
               "PYTHONHASHSEED": "0", "MCP_SESSION_MODE": "stateful"}
        cmd = [valgrind, "-q", *CALLGRIND, f"--callgrind-out-file={workdir / f'callgrind.{era}.out'}",
               sys.executable, "-m", "benchmarks.proxy_count", "--child", str(marks), era]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the count failed:\n{proc.stderr[-2000:]}")
    dumps = read_dumps(workdir)
    out: dict[str, float] = {}
    for side in ("direct", "proxied"):
        key = f"{side}-{era}"
        low = sum(dumps[f"{key}/low{i}"] for i in range(SLICES))
        high = sum(dumps[f"{key}/high{i}"] for i in range(SLICES))
        out[side] = (high - low) / (HIGH - LOW)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--era", choices=["modern", "legacy", "both"], default="both")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        import uvloop

        logging.disable(logging.WARNING)
        uvloop.run(_child(*args.child))
        return 0
    print("| era | direct instructions/call | proxied (gateway) instructions/call | ratio |")
    print("|---|---|---|---|")
    for era in (["modern", "legacy"] if args.era == "both" else [args.era]):
        with tempfile.TemporaryDirectory() as tmp:
            c = count(era, Path(tmp))
        label = "2026-07-28" if era == "modern" else "2025 session"
        print(f"| {label} | {c['direct']:,.0f} | {c['proxied']:,.0f} | {c['proxied'] / c['direct']:.1f}x |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
