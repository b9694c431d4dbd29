"""The TM-style workload (TM Dev Lab's MCP benchmark v2, rebuilt): three tools doing real Redis
and HTTP I/O, 50 virtual users, in two forms (``tm_session``: every tool call a full session of
initialize, notifications/initialized, tools/call and DELETE, as published; ``tm_sessionless``:
one 2026-07-28 tools/call per request), on mcpcore (one worker and ``--workers 2``, and in the
session form with the Redis session store), the official SDK, FastMCP and the official TS SDK
on Node 22, interleaved round by round. See benchmarks/README.md.

A server that cannot speak a form (``Scenario.unable``) is asked once, and reported "not
available" with its answer: never measured on something else.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any

import httpx

from ..harness.catalog import SERVERS, Server, label
from ..harness.config import LOAD_CPU, NODE_HINT, SERVER_CPU, ServerFailed
from ..harness.launch import start_server
from ..harness.processes import stop
from ..harness.report import cell, fmt
from ..harness.sampling import cpu_busy_seconds, tree_cpu_seconds, tree_status
from ..harness.scenario import Ctx, Family, Scenario
from ..harness.tm import VUS, Services, check_workload, lua_script, services
from ..harness.wrk import run_wrk
from .load import Variant, run_variants

MODULES = {"mcpcore": "tm_mcpcore", "mcpcore_w2": "tm_mcpcore", "sdk": "tm_sdk", "fastmcp": "tm_fastmcp",
           "ts_sdk": "tm_ts_sdk.cjs"}
"""The module (in benchmarks/servers/) serving the workload for each server."""


def _form(sc: Scenario) -> str:
    return "session" if sc.wire == "legacy" else "sessionless"


def measure(ctx: Ctx, sc: Scenario, server: Server, env: dict[str, str], svc: Services) -> dict[str, Any]:
    """One sample: fresh Redis, start the server, check the tools, warm up, load, check again, stop."""
    svc.redis.flush()
    run = start_server(server, env, ctx.tools, ctx.workdir, ctx.python)
    try:
        with httpx.Client(timeout=30, trust_env=False) as client:
            check = check_workload(client, run.url, _form(sc), svc.api_url)
        script = ctx.workdir / f"{sc.id}-{server.key}.lua"
        script.write_text(lua_script(_form(sc)))
        load = dataclasses.replace(ctx.load, threads=VUS, connections=VUS)
        if ctx.load.warmup > 0:
            run_wrk(ctx.tools, script, run.url, ctx.load.warmup, load)
        cpu0, core0, load0, svc0, t0 = (tree_cpu_seconds(run.proc.pid), cpu_busy_seconds(SERVER_CPU),
                                        cpu_busy_seconds(LOAD_CPU), svc.cpu_seconds(), time.monotonic())
        data = run_wrk(ctx.tools, script, run.url, ctx.load.duration, load)
        cpu1, core1, load1, svc1, t1 = (tree_cpu_seconds(run.proc.pid), cpu_busy_seconds(SERVER_CPU),
                                        cpu_busy_seconds(LOAD_CPU), svc.cpu_seconds(), time.monotonic())
        rss, hwm = tree_status(run.proc.pid, "VmRSS"), tree_status(run.proc.pid, "VmHWM")
        with httpx.Client(timeout=30, trust_env=False) as client:
            check_workload(client, run.url, _form(sc), svc.api_url)
        if run.proc.poll() is not None:
            raise ServerFailed(f"server died during the load: {run.log_tail()}")
    finally:
        stop(run.proc)
    wall = t1 - t0
    seconds = data["duration_us"] / 1e6
    rps = data["requests"] / seconds if seconds else 0.0
    calls = data["calls"] / seconds if seconds else 0.0
    server_cpu = (cpu1 - cpu0) / wall if cpu0 is not None and cpu1 is not None else None
    svc_cpu = (svc1 - svc0) / wall if svc0 is not None and svc1 is not None else None
    alone = ctx.tools.pinned and server.workers == 1  # several workers span both cores: no noise gauge
    return {
        "rps": rps, "calls_per_s": calls,
        "rps_cpu": rps / server_cpu if server_cpu else None,
        "cpu_us_per_request": server_cpu * 1e6 / rps if server_cpu and rps else None,
        "cpu_us_per_call": server_cpu * 1e6 / calls if server_cpu and calls else None,
        "p50_ms": data["p50_us"] / 1000, "p90_ms": data["p90_us"] / 1000, "p99_ms": data["p99_us"] / 1000,
        "p999_ms": data["p999_us"] / 1000, "max_ms": data["max_us"] / 1000,
        "requests": data["requests"], "calls": data["calls"],
        "errors": sum(data[k] for k in ("err_connect", "err_read", "err_write", "err_status", "err_timeout"))
        + data["app_errors"], "app_errors": data["app_errors"],
        "bytes_per_response": data["bytes"] / max(1, data["requests"]),
        "rss_mb": rss / 2**20 if rss else None, "hwm_mb": hwm / 2**20 if hwm else None,
        "server_cpu": server_cpu, "services_cpu": svc_cpu, "wrk_cpu": data["wrk_cpu"],
        "core0_other": ((core1 - core0) - (cpu1 - cpu0)) / wall
        if alone and None not in (core0, core1, cpu0, cpu1) else None,  # type: ignore[operator]
        "core1_other": ((load1 - load0) / wall - (data["wrk_cpu"] or 0.0) - (svc_cpu or 0.0))
        if alone and load0 is not None and load1 is not None else None,
        "check": check,
    }


def _probe(ctx: Ctx, sc: Scenario, server: Server, env: dict[str, str], svc: Services, why: str) -> dict[str, Any]:
    """Ask a server that cannot speak this form once: "not available" with its answer, or None
    when it answered correctly after all (then it is measured)."""
    try:
        run = start_server(server, env, ctx.tools, ctx.workdir, ctx.python)
    except ServerFailed as exc:
        return {"status": "not available", "reason": f"{why} (and it did not start: {exc})"}
    try:
        with httpx.Client(timeout=30, trust_env=False) as client:
            check_workload(client, run.url, _form(sc), svc.api_url)
    except ServerFailed as exc:
        return {"status": "not available", "reason": f"{why}; asked anyway, it answered: {exc}"}
    finally:
        stop(run.proc)
    return {}


def run(ctx: Ctx, sc: Scenario, servers: list[str]) -> dict[str, Any]:
    """The selected servers (and ``sc.variants`` of mcpcore), interleaved, with the workload's
    Redis and catalog API running for the whole scenario."""
    out: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        try:
            svc = stack.enter_context(services(ctx.tools, ctx.workdir, ctx.python["main"]))
        except ServerFailed as exc:
            return {key: {"status": "not available", "reason": str(exc)} for key in servers}
        variants: list[Variant] = []
        for key in servers:
            server = dataclasses.replace(SERVERS[key], module=MODULES[key])
            env = {**svc.env(), **sc.env.get(key, {})}
            if server.runtime == "node" and ctx.tools.node is None:
                out[key] = {"status": "not available", "reason": NODE_HINT}
                continue
            if key in sc.unable:
                probed = _probe(ctx, sc, server, env, svc, sc.unable[key])
                if probed:
                    out[key] = probed
                    continue
            variants.append((key, server, env))
            if key == "mcpcore":
                variants += [(name, server, {**env, **extra, "REDIS_URL": svc.redis.url})
                             for name, extra in sc.variants.items()]

        def sample(c: Ctx, s: Scenario, server: Server, env: dict[str, str]) -> dict[str, Any]:
            return measure(c, s, server, env, svc)

        out.update(run_variants(ctx, sc, variants, measure=sample) if variants else {})
    for r in out.values():
        r.get("env", {}).pop("REDIS_URL", None)
        for k in ("BENCH_REDIS_URL", "BENCH_API_URL"):  # ports of this run only
            r.get("env", {}).pop(k, None)
    order = [*servers[:1], *sc.variants, *servers[1:]]
    return {k: out[k] for k in order if k in out}


def table(sc: Scenario, servers: dict[str, Any]) -> list[str]:
    """One row per server: HTTP req/s, tool calls/s, latency, RSS, each also as a ratio to mcpcore."""
    base = servers.get("mcpcore", {})
    ok = base.get("status") == "ok"

    def rel(r: dict[str, Any], key: str) -> str:
        if not ok or not r.get(key) or not base.get(key):
            return "—"
        return f"{r[key] / base[key]:.2f}x"

    out = ["| Server | HTTP req/s (min-max) | x mcpcore | tool calls/s | CPU us/call | p50 ms | x mcpcore | p99 ms | "
           "x mcpcore | RSS MB | x mcpcore | server CPU | errors |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, r in servers.items():
        name = label(key)
        if r.get("status") != "ok":
            out.append(f"| {name} | **{r.get('status')}**: {cell(r.get('reason', ''))} ||||||||||||")
            continue
        mark = f" (!{r['below_quality_bar']})" if r.get("below_quality_bar") else ""
        out.append(f"| {name}{mark} | {fmt(r['rps'])} ({fmt(r['rps_min'])}-{fmt(r['rps_max'])}) | {rel(r, 'rps')} | "
                   f"{fmt(r.get('calls_per_s'))} | {fmt(r.get('cpu_us_per_call'))} | {fmt(r['p50_ms'], '.2f')} | "
                   f"{rel(r, 'p50_ms')} | {fmt(r['p99_ms'], '.2f')} | {rel(r, 'p99_ms')} | {fmt(r['rss_mb'], '.1f')} | "
                   f"{rel(r, 'rss_mb')} | {fmt((r['server_cpu'] or 0) * 100, '.0f')}% | {r['errors']} |")
    return out


def notes(sc: Scenario, servers: dict[str, Any]) -> list[str]:
    """How to read the table: what a request is, where each server ran, what the load cost."""
    ok = [r for r in servers.values() if r.get("status") == "ok"]
    svc = [r["services_cpu"] for r in ok if r.get("services_cpu") is not None]
    wrk = [r["wrk_cpu"] for r in ok if r.get("wrk_cpu") is not None]
    out = ["", f"x mcpcore: the server's figure over mcpcore's (one worker) in this run: above 1 for req/s, below 1 "
               f"for latency and RSS means better than mcpcore. Load: wrk, {VUS} threads of one connection each (the "
               f"published run's {VUS} virtual users); latency is per HTTP request"
               + (", each tool call being four of them." if sc.wire == "legacy" else ".")]
    if svc and wrk:
        out.append(f"The catalog API and redis-server used {max(svc) * 100:.0f}% of CPU 1 at most, wrk "
                   f"{max(wrk) * 100:.0f}%. Every server ran on CPU 0 alone except mcpcore --workers 2, which ran "
                   "on CPUs 0 and 1 and shared CPU 1 with wrk, the API and Redis (the published run gave each "
                   "server 2 vCPU of its own; this machine has 2 in all).")
    return out


FAMILY = Family(kind="tm", run=run, table=table, notes=notes)
