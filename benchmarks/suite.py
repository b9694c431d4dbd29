"""One whole run: each selected scenario by its family, then the report; and the smoke run.

Every server runs alone under uvicorn pinned to CPU 0; wrk (and redis-server, and this harness)
run on CPU 1. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .harness.catalog import ALL, SERVERS
from .harness.config import LOAD_CPU, NICE, OUT_DIR, PEERS_PY, SERVER_CPU, log
from .harness.machine import (
    ensure_peers_venv,
    find_tools,
    load_average,
    machine_info,
    peers_venv_ready,
    source_state,
    versions,
)
from .harness.processes import stop_all
from .harness.report import render_markdown, write_report
from .harness.sampling import LoadSettings
from .harness.scenario import Ctx, Family
from .harness.stats import ratios
from .options import parse_args
from .scenarios import idle_sessions, instructions, load, sse_buffer, tasks, tm
from .scenarios.catalog import SCENARIO_BY_ID, SCENARIOS
from .scenarios.targets import targets

FAMILIES: dict[str, Family] = {f.kind: f for f in (load.FAMILY, sse_buffer.FAMILY, instructions.FAMILY,
                                                   idle_sessions.FAMILY, tasks.FAMILY, tm.FAMILY)}


def _settings(args: argparse.Namespace, pinned: bool, nice: bool, elapsed: float) -> dict[str, Any]:
    return {"duration": args.duration, "warmup": args.warmup, "repeat": args.repeat,
            "connections": args.connections, "threads": args.threads, "sessions": args.sessions,
            "retries": args.retries, "quiet_wait": args.quiet_wait, "max_noise": args.max_noise,
            "min_server_cpu": args.min_server_cpu,
            "pinned": pinned, "server_cpu": SERVER_CPU if pinned else None,
            "nice": NICE if nice else 0,
            "load_cpu": LOAD_CPU if pinned else None, "smoke": bool(args.smoke),
            "elapsed_s": round(elapsed, 1)}


def run(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """Measure what ``args`` selects and write the report; (report, number of failed servers)."""
    tools = find_tools()
    wanted_servers = [s for s in ALL if s in args.servers] if args.servers else list(ALL)
    need_peers = any(SERVERS[k].peers for k in wanted_servers)
    python: dict[str, Path] = {"main": Path(sys.executable)}
    if need_peers and args.smoke:
        # The smoke run installs nothing: the SDK (mcp 2.3, a dev dependency) runs from the project's
        # .venv unless the peers' virtualenv is already there and current.
        python["peers"] = PEERS_PY if peers_venv_ready() else Path(sys.executable)
    elif need_peers:
        python["peers"] = ensure_peers_venv()
    elif PEERS_PY.exists():
        python["peers"] = PEERS_PY
    scenarios = [SCENARIO_BY_ID[s] for s in args.scenarios] if args.scenarios else SCENARIOS
    load_settings = LoadSettings(duration=args.duration, warmup=args.warmup, connections=args.connections,
                                 threads=args.threads, retries=args.retries, quiet_wait=args.quiet_wait,
                                 max_noise=args.max_noise, min_server_cpu=args.min_server_cpu)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"meta": {}, "results": {}}
    failures = 0
    source_before = source_state()
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="mcpbench-") as tmp:
        ctx = Ctx(tools=tools, python=python, load=load_settings, workdir=Path(tmp), sessions=args.sessions,
                  settle=0.1 if args.smoke else 0.5, repeat=args.repeat, session_repeat=args.session_repeat,
                  smoke=bool(args.smoke), hash_seeds=tuple(args.hash_seeds[:1] if args.smoke else args.hash_seeds))
        started = time.monotonic()
        for sc in scenarios:
            servers = [k for k in sc.servers if k in wanted_servers]
            skipped = {k: why for k, why in sc.skip.items() if k in wanted_servers}
            if not servers:
                log(f"== {sc.id}: no selected server runs this scenario")
                continue
            log(f"== {sc.id}: {sc.title}")
            res = FAMILIES[sc.kind].run(ctx, sc, servers)
            failures += sum(1 for r in res.values() if r.get("status") == "failed")
            report["results"][sc.id] = {"title": sc.title, "measures": sc.measures, "servers": res,
                                        "skipped": skipped}
        elapsed = time.monotonic() - started
    report["meta"] = {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": args.command_line,
        "machine": {**machine_info(), "loadavg_start": load_before, "loadavg_end": load_average()},
        "source": {**source_before, "changed_during_run": source_state() != source_before},
        "versions": versions(python, tools),
        "settings": _settings(args, tools.pinned, bool(tools.nice), elapsed),
    }
    report["ratios"] = ratios(report["results"], SCENARIO_BY_ID)
    report["targets"] = targets(report["results"], report["ratios"])
    md = render_markdown(report, SCENARIO_BY_ID, FAMILIES)
    full_run = (not args.smoke and args.scenarios is None and args.servers is None
                and out_dir.resolve() == OUT_DIR.resolve())
    write_report(report, md, out_dir, python, chart=not args.no_chart, readme=full_run, elapsed=elapsed)
    return report, failures


# The smoke run: every code path of the harness (JSON and SSE loads, 2025 sessions, the Redis
# check on a standalone server and on a 3-node Cluster with mcpcore in memory interleaved, the
# A/B variants, idle sessions, instruction counts under valgrind (20 and 60 requests), ratios,
# targets, markdown, JSON, chart) on mcpcore and the bare endpoints only, with 1 s loads and no
# warm-up, so it fits in a test suite (tasks_get with the memory store alone and a short idle
# window).
# Left out for time: call_logging_sse (sse_buffer runs the same SSE session path, with
# logging/setLevel) and tools_list / resources_read (call_2026's path with another body and
# verifier). Every server module that runs in the project's .venv is started at least once.
SMOKE_PLAN: list[tuple[str, list[str]]] = [
    ("call_2026", ["mcpcore", "mcpcore_w2", "mcpcore_layers", "starlette", "asgi"]),
    ("call_2025", ["mcpcore"]),
    ("instr_2025", ["mcpcore"]),
    ("call_2025_redis", ["mcpcore"]),
    ("call_2025_redis_cluster", ["mcpcore"]),
    ("sse_buffer", ["mcpcore"]),
    ("idle_sessions", ["mcpcore"]),
    ("tasks_get", ["mcpcore"]),
    # The TM-style workload in both forms: mcpcore (one and two workers, and the Redis session
    # store, in the session form), the SDK (from the project's .venv) and the TS SDK on Node (asked
    # once in the sessionless form, which it cannot speak). FastMCP lives only in .venv-peers: left out.
    ("tm_session", ["mcpcore", "mcpcore_w2", "sdk", "ts_sdk"]),
    ("tm_sessionless", ["mcpcore", "sdk", "ts_sdk"]),
]
SMOKE_SERVERS = "mcpcore,mcpcore_w2,mcpcore_layers,starlette,asgi,sdk,ts_sdk"


def smoke(out_dir: str | os.PathLike[str] | None = None) -> int:
    """A CI-sized run (well under 20 s): 0 when every path works.

    Raises:
        BenchError: wrk is missing (the message carries the install command).
    """
    affinity = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    find_tools()  # fail loudly before anything starts (and move this process off the server's core)
    saved = {sc.id: sc.servers for sc in SCENARIOS}
    with tempfile.TemporaryDirectory(prefix="mcpbench-smoke-") as tmp:
        args = parse_args(["--smoke", "--duration", "1", "--warmup", "0", "--repeat", "1", "--session-repeat", "1",
                           "--sessions", "100",
                           "--retries", "0", "--quiet-wait", "0",
                           "--connections", "16", "--servers", SMOKE_SERVERS,
                           "--scenarios", ",".join(sid for sid, _ in SMOKE_PLAN),
                           "--out", str(out_dir or tmp)])
        try:
            for sid, servers in SMOKE_PLAN:
                SCENARIO_BY_ID[sid].servers = servers
            report, failures = run(args)
        finally:
            for sc in SCENARIOS:
                sc.servers = saved[sc.id]
            stop_all()
            if affinity is not None:
                os.sched_setaffinity(0, affinity)
        problems = failures
        for sid, _ in SMOKE_PLAN:
            for key, r in report["results"][sid]["servers"].items():
                if r.get("status") == "ok":
                    if r.get("errors"):
                        log(f"SMOKE: {sid}/{key} had {r['errors']} wrk errors")
                        problems += 1
                elif r.get("status") != "not available" or SCENARIO_BY_ID[sid].kind == "instructions":
                    log(f"SMOKE: {sid}/{key}: {r.get('status')}: {r.get('reason')}")
                    problems += 1
    return 1 if problems else 0
