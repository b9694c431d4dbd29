"""Load scenarios: one request, sent by wrk for ``--duration`` seconds to each server in turn
(call_2026, call_2025, call_2025_redis, call_2025_redis_cluster, call_logging_sse, tools_list,
resources_read).

Each (scenario, server) pair is measured ``--repeat`` times, servers interleaved round-robin and
restarted for every repeat; a sample below the quality bar is measured again and the best
attempt kept; the median is reported. ``run_variants`` is shared with the A/B family.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson

from ..harness.catalog import SERVERS, Server, label
from ..harness.config import LOAD_CPU, SERVER_CPU, ServerFailed, log
from ..harness.launch import start_server
from ..harness.processes import stop
from ..harness.redis_cluster import redis_for
from ..harness.report import cell, fmt
from ..harness.sampling import cpu_busy_seconds, tree_cpu_seconds, tree_status, wait_quiet
from ..harness.scenario import Ctx, Family, Scenario
from ..harness.stats import summarize
from ..harness.wire import open_session, request_headers, request_message, verify
from ..harness.wrk import run_wrk, wrk_script
from .catalog import SCENARIO_BY_ID

Variant = tuple[str, Server, dict[str, str]]  # (label in the report, server, its environment)
Measure = Callable[[Ctx, Scenario, Server, dict[str, str]], dict[str, Any]]  # one sample, as measure_once


def measure_once(ctx: Ctx, sc: Scenario, server: Server, env: dict[str, str]) -> dict[str, Any]:
    """Start the server, check it, warm it up, load it once, stop it."""
    run = start_server(server, env, ctx.tools, ctx.workdir, ctx.python)
    try:
        with httpx.Client(timeout=30, verify=False, trust_env=False) as client:
            session: dict[str, Any] = {}
            if sc.wire == "legacy":
                session = open_session(client, run.url, sc.log_level)
            if sc.redis and ctx.redis is not None and ctx.redis.keys() <= 0:
                raise ServerFailed("the server started and opened a session but stored nothing in Redis: "
                                   "MCP_SESSION_STORE=redis is accepted and ignored (sessions stay in memory)")
            headers = request_headers(sc, session.get("session_id"))
            check = verify(sc, client.post(run.url, content=orjson.dumps(request_message(sc)), headers=headers))
        script = ctx.workdir / f"{sc.id}-{server.key}.lua"
        script.write_text(wrk_script(sc, headers))
        if ctx.load.warmup > 0:
            run_wrk(ctx.tools, script, run.url, ctx.load.warmup, ctx.load)
        redis_cpu0 = None
        redis = ctx.redis if sc.redis else None
        if redis is not None:
            redis.reset_stats()
            redis_cpu0 = redis.cpu_seconds()
        cpu0, core0, load0, t0 = (tree_cpu_seconds(run.proc.pid), cpu_busy_seconds(SERVER_CPU),
                                  cpu_busy_seconds(LOAD_CPU), time.monotonic())
        data = run_wrk(ctx.tools, script, run.url, ctx.load.duration, ctx.load)
        cpu1, core1, load1, t1 = (tree_cpu_seconds(run.proc.pid), cpu_busy_seconds(SERVER_CPU),
                                  cpu_busy_seconds(LOAD_CPU), time.monotonic())
        rss, hwm = tree_status(run.proc.pid, "VmRSS"), tree_status(run.proc.pid, "VmHWM")  # all workers
        redis_stats: dict[str, Any] = {}
        if redis is not None:
            calls = redis.calls()  # summed over the nodes
            cpu = redis.cpu_seconds()
            redis_stats = {"redis_cpu": (cpu - redis_cpu0) / (t1 - t0)
                           if cpu is not None and redis_cpu0 is not None else None,
                           "redis_nodes": len(redis.ports),
                           "redis_calls_per_request": {k: round(v / max(1, data["requests"]), 4)
                                                       for k, v in sorted(calls.items())}}
        with httpx.Client(timeout=30, verify=False, trust_env=False) as client:  # still correct after the load?
            verify(sc, client.post(run.url, content=orjson.dumps(request_message(sc, 2)), headers=headers))
        if run.proc.poll() is not None:
            raise ServerFailed(f"server died during the load: {run.log_tail()}")
    finally:
        stop(run.proc)
    seconds = data["duration_us"] / 1e6
    errors = sum(data[k] for k in ("err_connect", "err_read", "err_write", "err_status", "err_timeout"))
    rps = data["requests"] / seconds if seconds else 0.0
    server_cpu = (cpu1 - cpu0) / (t1 - t0) if cpu0 is not None and cpu1 is not None else None
    return {
        "rps": rps,
        # Requests per second of the server's own CPU time: the cost per request, which CPU stolen
        # by other work on a shared machine does not change (much), unlike req/s.
        "rps_cpu": rps / server_cpu if server_cpu else None,
        "cpu_us_per_request": server_cpu * 1e6 / rps if server_cpu and rps else None,
        "p50_ms": data["p50_us"] / 1000, "p90_ms": data["p90_us"] / 1000, "p99_ms": data["p99_us"] / 1000,
        "p999_ms": data["p999_us"] / 1000, "max_ms": data["max_us"] / 1000,
        "requests": data["requests"], "errors": errors, "bytes_per_response": data["bytes"] / max(1, data["requests"]),
        "rss_mb": rss / 2**20 if rss else None, "hwm_mb": hwm / 2**20 if hwm else None,
        "server_cpu": server_cpu,
        # CPU 0 busy with anything but the server (other processes, interrupts): the noise gauge.
        "core0_other": ((core1 - core0) - (cpu1 - cpu0)) / (t1 - t0)
        if core0 is not None and core1 is not None and cpu0 is not None and cpu1 is not None
        and ctx.tools.pinned and server.workers == 1 else None,  # several workers span both cores

        # CPU 1 busy with anything but wrk and our own redis-server(s) (other processes, interrupts).
        "core1_other": ((load1 - load0) / (t1 - t0) - data["wrk_cpu"] - (redis_stats.get("redis_cpu") or 0.0))
        if load0 is not None and load1 is not None and data["wrk_cpu"] is not None and ctx.tools.pinned
        and server.workers == 1 else None,
        "wrk_cpu": data["wrk_cpu"], "check": check, **({"set_level": session["set_level"]}
                                                       if "set_level" in session else {}), **redis_stats,
    }


def _log_sample(sc: Scenario, name: str, r: int, attempt: int, res: dict[str, Any], elapsed: float, waited: float,
                retries: int) -> None:
    log(f"  {sc.id:<17} {name:<11} #{r + 1}{'.' + str(attempt + 1) if attempt else '  '}: "
        f"{res['rps']:>9,.0f} req/s  p50 {res['p50_ms']:6.2f} ms  "
        f"p99 {res['p99_ms']:7.2f} ms  rss {res['rss_mb'] or 0:6.1f} MB  cpu srv "
        f"{(res['server_cpu'] or 0) * 100:3.0f}% wrk {(res['wrk_cpu'] or 0) * 100:3.0f}% "
        f"other cpu0 {max(0.0, res['core0_other'] or 0) * 100:3.0f}% "
        f"cpu1 {max(0.0, res['core1_other'] or 0) * 100:3.0f}%  "
        f"err {res['errors']}  ({elapsed:.1f} s"
        + (f", waited {waited:.0f} s for quiet)" if waited >= 1 else ")")
        + (f"  [{res['quality']}{'; retrying' if attempt < retries else ''}]"
           if res["quality"] else ""))


def run_variants(ctx: Ctx, sc: Scenario, variants: list[Variant],
                 measured_as: dict[str, Scenario] | None = None, measure: Measure | None = None) -> dict[str, Any]:
    """Measure every variant ``ctx.repeat`` times, interleaved; each one's summary (or failure).
    A variant named in ``measured_as`` runs that scenario's request, checks and Redis use
    instead of ``sc``'s. ``measure`` takes one sample (default: ``measure_once``)."""
    sample = measure or measure_once
    as_of = measured_as or {}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in variants}
    failed: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        if sc.redis:
            try:
                ctx.redis = stack.enter_context(redis_for(sc.redis)(ctx.tools, ctx.workdir))
            except ServerFailed as exc:
                return {name: {"status": "not available", "reason": str(exc)} for name, _, _ in variants}
            for name, _, env in variants:
                if as_of.get(name, sc).redis:
                    env["REDIS_URL"] = ctx.redis.url
        for r in range(ctx.repeat):
            for name, server, env in variants:
                vsc = as_of.get(name, sc)
                if name in failed:
                    continue
                if vsc.redis and ctx.redis is not None:
                    ctx.redis.flush()
                attempts: list[dict[str, Any]] = []
                for attempt in range(1 + ctx.load.retries):
                    waited = wait_quiet(ctx.load.quiet_wait)
                    t0 = time.monotonic()
                    try:
                        res = sample(ctx, vsc, server, env)
                    except ServerFailed as exc:
                        failed[name] = str(exc)
                        log(f"  {sc.id:<17} {name:<11} #{r + 1}: FAILED {exc}")
                        break
                    res["quality"] = ctx.load.quality(res)
                    attempts.append(res)
                    _log_sample(sc, name, r, attempt, res, time.monotonic() - t0, waited, ctx.load.retries)
                    if res["quality"] is None:
                        break
                if name in failed or not attempts:
                    continue
                # Keep the attempt that measured the server most alone (a noisy machine never makes
                # a server faster, so this only drops samples spoiled by other work).
                best = max(attempts, key=lambda a: (a["quality"] is None,
                                                    (a["server_cpu"] or 0) - max(0.0, a["core0_other"] or 0)))
                best["attempts"] = len(attempts)
                results[name].append(best)
        ctx.redis = None
    out: dict[str, Any] = {}
    for name, _, env in variants:
        if name in failed:
            reason = failed[name]
            status = "not available" if as_of.get(name, sc).redis and (
                "refuse" in reason or "exited" in reason or "Redis" in reason) else "failed"
            out[name] = {"status": status, "reason": reason}
        else:
            out[name] = summarize(results[name])
        out[name]["env"] = {k: v for k, v in env.items() if k != "REDIS_URL"}
        if name in as_of:
            out[name]["as_in"] = as_of[name].id
    return out


def run(ctx: Ctx, sc: Scenario, servers: list[str]) -> dict[str, Any]:
    """Every selected server with the scenario's environment for it; with ``sc.alongside``,
    mcpcore as that scenario runs it too, interleaved (row "mcpcore (<its id>)")."""
    variants: list[Variant] = [(key, SERVERS[key], dict(sc.env.get(key, {}))) for key in servers]
    measured_as: dict[str, Scenario] = {}
    if sc.alongside and "mcpcore" in servers:
        other = SCENARIO_BY_ID[sc.alongside]
        name = f"mcpcore ({other.id})"
        variants.append((name, SERVERS["mcpcore"], dict(other.env.get("mcpcore", {}))))
        measured_as[name] = other
    return run_variants(ctx, sc, variants, measured_as)


def table(sc: Scenario, servers: dict[str, Any]) -> list[str]:
    """One row per server (or variant): req/s, CPU per request, latency, RSS, load, the response."""
    out = ["| Server | req/s (min-max) | CPU us/req | p50 ms | p99 ms | RSS MB | server CPU | wrk CPU | "
           "other load CPU 0 / CPU 1 | errors | response |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for key, r in servers.items():
        name = label(key)
        if r.get("status") != "ok":
            out.append(f"| {name} | **{r.get('status')}**: {cell(r.get('reason', ''))} ||||||||||")
            continue
        ck = r["check"]
        resp = f"{ck['content_type']}, {ck['bytes']} B" + (f", {ck['sse_events']} events" if ck["sse_events"]
                                                           else "")
        if ck.get("sse_ids"):
            resp += f", {ck['sse_ids']} event ids"
        mark = f" (!{r['below_quality_bar']})" if r.get("below_quality_bar") else ""
        out.append(f"| {name}{mark} | {fmt(r['rps'])} ({fmt(r['rps_min'])}-{fmt(r['rps_max'])}) | "
                   f"{fmt(r.get('cpu_us_per_request'), '.0f')} | "
                   f"{fmt(r['p50_ms'], '.2f')} | {fmt(r['p99_ms'], '.2f')} | {fmt(r['rss_mb'], '.1f')} | "
                   f"{fmt((r['server_cpu'] or 0) * 100, '.0f')}% | {fmt((r['wrk_cpu'] or 0) * 100, '.0f')}% | "
                   f"{fmt(max(0.0, r['core0_other'] or 0) * 100, '.0f')}% / "
                   f"{fmt(max(0.0, r['core1_other'] or 0) * 100, '.0f')}% | "
                   f"{r['errors']} | {resp} |")
    return out


FAMILY = Family(kind="load", run=run, table=table)
