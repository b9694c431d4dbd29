"""Tasks (mcpcore only): ``tasks/get`` of a finished task against ``tools/list`` on the same
server in the same run, and the CPU an idle server with 1,000 finished tasks uses.

For each store (``variants``: memory, Redis) and each repeat, one server is started with the
echo server's task tools (``BENCH_TASKS=1``); a task is created and polled to its end, another
left working, then wrk loads ``tasks/get`` of each and ``tools/list`` in turn (the order rotates
per repeat), each after its own warm-up: req/s of the three, and each ``tasks/get`` over
``tools/list`` of the same repeat (the median of these paired ratios). Then, on a fresh server,
its CPU time over ``IDLE_S`` seconds before any task, and again once 1,000 tasks were created
and polled to their end: what it burns doing nothing (no poll loop runs while nothing does).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import replace
from typing import Any

import httpx
import orjson

from ..harness.catalog import SERVERS
from ..harness.config import SERVER_CPU, ServerFailed, log
from ..harness.launch import start_server
from ..harness.processes import stop
from ..harness.redis_server import redis_server
from ..harness.report import cell, fmt
from ..harness.sampling import cpu_busy_seconds, proc_cpu_seconds, proc_status, wait_quiet
from ..harness.scenario import Ctx, Family, Scenario
from ..harness.wire import request_headers, request_message
from ..harness.wrk import run_wrk, wrk_script

TASKS_EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
IDLE_TASKS = 1000
IDLE_S = 10.0


def _post(client: httpx.Client, url: str, sc: Scenario, rid: int = 1) -> dict[str, Any]:
    r = client.post(url, content=orjson.dumps(request_message(sc, rid)), headers=request_headers(sc, None))
    if r.status_code != 200:
        raise ServerFailed(f"{sc.method} answered HTTP {r.status_code}: {r.text[:300]}")
    msg = orjson.loads(r.content)
    if "error" in msg:
        raise ServerFailed(f"{sc.method}: {msg['error']}")
    result: dict[str, Any] = msg["result"]
    return result


def _task(client: httpx.Client, url: str, sc: Scenario, tool: str, arguments: dict[str, Any]) -> str:
    created = _post(client, url, replace(sc, method="tools/call", params={"name": tool, "arguments": arguments}))
    if created.get("resultType") != "task":
        raise ServerFailed(f"{tool} did not answer with a task: {created}")
    return str(created["taskId"])


def _finished_task(client: httpx.Client, url: str, sc: Scenario) -> str:
    """Create a task of the echo task tool and poll it to its end: its id."""
    created = {"taskId": _task(client, url, sc, "echo_task", {"text": "t"})}
    get = replace(sc, method="tasks/get", params={"taskId": created["taskId"]})
    deadline = time.monotonic() + 10
    while (task := _post(client, url, get))["status"] != "completed":
        if task["status"] in ("failed", "cancelled") or time.monotonic() > deadline:
            raise ServerFailed(f"the task did not complete: {task}")
        time.sleep(0.01)
    return str(created["taskId"])


def _load(ctx: Ctx, sc: Scenario, url: str, pid: int) -> dict[str, Any]:
    """One wrk load of ``sc`` (after its warm-up): req/s, server CPU, noise."""
    script = ctx.workdir / f"{sc.id}.lua"
    script.write_text(wrk_script(sc, request_headers(sc, None)))
    if ctx.load.warmup > 0:
        run_wrk(ctx.tools, script, url, ctx.load.warmup, ctx.load)
    wait_quiet(min(ctx.load.quiet_wait, 5))
    cpu0, core0, t0 = proc_cpu_seconds(pid), cpu_busy_seconds(SERVER_CPU), time.monotonic()
    data = run_wrk(ctx.tools, script, url, ctx.load.duration, ctx.load)
    cpu1, core1, t1 = proc_cpu_seconds(pid), cpu_busy_seconds(SERVER_CPU), time.monotonic()
    seconds = data["duration_us"] / 1e6
    rps = data["requests"] / seconds if seconds else 0.0
    server_cpu = (cpu1 - cpu0) / (t1 - t0) if cpu0 is not None and cpu1 is not None else None
    errors = sum(data[k] for k in ("err_connect", "err_read", "err_write", "err_status", "err_timeout"))
    return {"rps": rps, "rps_cpu": rps / server_cpu if server_cpu else None, "server_cpu": server_cpu,
            "p50_ms": data["p50_us"] / 1000, "errors": errors,
            "core0_other": ((core1 - core0) - (cpu1 - cpu0)) / (t1 - t0)
            if None not in (core0, core1, cpu0, cpu1) and ctx.tools.pinned else None}


LOADS = ("finished", "working", "tools/list")


def _pair(ctx: Ctx, sc: Scenario, env: dict[str, str], r: int) -> dict[str, Any]:
    """One server: tasks/get of a finished and of a working task, and tools/list, loaded in turn."""
    run = start_server(SERVERS["mcpcore"], env, ctx.tools, ctx.workdir, ctx.python)
    try:
        with httpx.Client(timeout=30, trust_env=False) as client:
            done = _finished_task(client, run.url, sc)
            working = _task(client, run.url, sc, "wait_task", {"seconds": 3600})
        loads = [("finished", replace(sc, id=f"{sc.id}-finished", method="tasks/get", params={"taskId": done})),
                 ("working", replace(sc, id=f"{sc.id}-working", method="tasks/get", params={"taskId": working})),
                 ("tools/list", replace(sc, id=f"{sc.id}-list", method="tools/list", params={}))]
        order = loads[r % 3:] + loads[:r % 3]
        out = {name: _load(ctx, s, run.url, run.proc.pid) for name, s in order}
        if run.proc.poll() is not None:
            raise ServerFailed(f"server died during the load: {run.log_tail()}")
        return out
    finally:
        stop(run.proc)


def _idle(ctx: Ctx, sc: Scenario, env: dict[str, str]) -> dict[str, Any]:
    """CPU of a server left alone with many finished tasks."""
    n, idle_s = (20, 0.5) if ctx.smoke else (IDLE_TASKS, IDLE_S)
    run = start_server(SERVERS["mcpcore"], env, ctx.tools, ctx.workdir, ctx.python)
    pid = run.proc.pid

    def idle_cpu() -> tuple[float, float]:
        time.sleep(1.0)
        cpu0, t0 = proc_cpu_seconds(pid), time.monotonic()
        time.sleep(idle_s)
        cpu1, t1 = proc_cpu_seconds(pid), time.monotonic()
        if cpu0 is None or cpu1 is None:
            raise ServerFailed("could not read the server's CPU time")
        return cpu1 - cpu0, t1 - t0

    try:
        with httpx.Client(timeout=30, trust_env=False) as client:
            _post(client, run.url, replace(sc, method="tools/list", params={}))
            before, _ = idle_cpu()  # the same server before any task: what idling costs anyway
            for _ in range(n):
                _finished_task(client, run.url, sc)
        cpu, seconds = idle_cpu()
        rss = proc_status(pid, "VmRSS")
        return {"tasks": n, "seconds": round(seconds, 2), "cpu_s": round(cpu, 3), "cpu_share": cpu / seconds,
                "cpu_s_before": round(before, 3), "rss_mb": rss / 2**20 if rss else None}
    finally:
        stop(run.proc)


def _median(samples: list[dict[str, Any]], key: str) -> float | None:
    vals = [s[key] for s in samples if s.get(key) is not None]
    return statistics.median(vals) if vals else None


def run(ctx: Ctx, sc: Scenario, servers: list[str]) -> dict[str, Any]:
    """Every store variant: the loads, their ratio, the idle CPU."""
    out: dict[str, Any] = {}
    variants = list(sc.variants.items())
    for name, extra in variants[:1] if ctx.smoke else variants:  # the smoke run: the memory store alone
        env = {**sc.env.get("mcpcore", {}), **extra}
        try:
            with contextlib.ExitStack() as stack:
                if env.get("MCP_SESSION_STORE") == "redis":
                    port, _pid = stack.enter_context(redis_server(ctx.tools, ctx.workdir))
                    env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
                pairs = []
                for r in range(ctx.repeat):
                    pairs.append(_pair(ctx, sc, env, r))
                    p = pairs[-1]
                    log(f"  {sc.id:<17} {name:<7} #{r + 1}: tasks/get finished {p['finished']['rps']:>7,.0f}  "
                        f"working {p['working']['rps']:>7,.0f}  tools/list {p['tools/list']['rps']:>7,.0f} req/s")
                idle = _idle(ctx, sc, env)
                log(f"  {sc.id:<17} {name:<7} idle: {idle['cpu_s_before']:.3f} s CPU in {idle['seconds']:.1f} s "
                    f"before any task, {idle['cpu_s']:.3f} s with {idle['tasks']} finished tasks")
        except ServerFailed as exc:
            out[name] = {"status": "failed", "reason": str(exc)}
            log(f"  {sc.id:<17} {name:<7}: FAILED {exc}")
            continue
        res: dict[str, Any] = {"status": "ok", "env": {k: v for k, v in env.items() if k != "REDIS_URL"},
                               "idle": idle, "errors": sum(p[k]["errors"] for p in pairs for k in LOADS)}
        for load in LOADS:
            samples = [p[load] for p in pairs]
            res[load] = {k: _median(samples, k) for k in ("rps", "rps_cpu", "server_cpu", "p50_ms", "core0_other")}
            res[load]["rps_min"] = min(s["rps"] for s in samples)
            res[load]["rps_max"] = max(s["rps"] for s in samples)
        for load in ("finished", "working"):  # paired: each repeat's loads ran on one server, minutes apart at most
            res[f"ratio_{load}"] = statistics.median(p[load]["rps"] / p["tools/list"]["rps"] for p in pairs)
            per_cpu = [p[load]["rps_cpu"] / p["tools/list"]["rps_cpu"] for p in pairs
                       if p[load].get("rps_cpu") and p["tools/list"].get("rps_cpu")]
            res[f"ratio_{load}_cpu"] = statistics.median(per_cpu) if per_cpu else None
        out[name] = res
    return out


def _rps(r: dict[str, Any]) -> str:
    return f"{fmt(r['rps'])} ({fmt(r['rps_min'])}-{fmt(r['rps_max'])})"


def table(sc: Scenario, servers: dict[str, Any]) -> list[str]:
    """One row per store: the loads, tasks/get over tools/list, the idle server's CPU."""
    out = ["| mcpcore, store | tasks/get, finished task: req/s (min-max) | tasks/get, working task | tools/list | "
           "tasks/get / tools/list, finished; working (req/s, per CPU-second) | idle CPU over 10 s: no task; "
           "1,000 finished |",
           "|---|---:|---:|---:|---:|---|"]
    for name, r in servers.items():
        if r.get("status") != "ok":
            out.append(f"| {name} | **{r.get('status')}**: {cell(r.get('reason', ''))} |||||")
            continue
        idle = r["idle"]
        out.append(f"| {name} | {_rps(r['finished'])} | {_rps(r['working'])} | {_rps(r['tools/list'])} | "
                   f"{fmt(r['ratio_finished'], '.2f')}; {fmt(r['ratio_working'], '.2f')} "
                   f"({fmt(r.get('ratio_finished_cpu'), '.2f')}; {fmt(r.get('ratio_working_cpu'), '.2f')}) | "
                   f"{idle['cpu_s_before']:.3f} s; {idle['cpu_s']:.3f} s ({idle['cpu_share'] * 100:.2f}%) |")
    return out


FAMILY = Family(kind="tasks", run=run, table=table)
