"""Instructions per request, counted by valgrind: the benchmark's noise-free column (``instr_*``).

req/s on a shared machine moves by several percent between runs (other tenants' cache and memory
traffic), which is as large as the differences the issue's ">= 1.0x bare Starlette" target asks
about. The number of instructions a server executes per request does not move: each server runs
under ``valgrind --tool=cachegrind`` (user space only: the interpreter, the extensions, uvloop and
httptools; not the kernel), a client sends the scenario's exact request ``n`` times over a few
keep-alive connections after a warm-up (each with a fresh id, as wrk's are), and the count is
read at exit. Two runs that differ only in ``n`` give the cost of one request as the difference
of their totals over the difference of their request counts, so start-up and shutdown cancel.
Cachegrind's simulated first-level cache misses (instruction and data) come with it: they show
a larger code or data footprint, which instruction counts alone do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import statistics
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import orjson

from ..harness.catalog import SERVERS, Server, label
from ..harness.config import ServerFailed, log
from ..harness.launch import start_server
from ..harness.processes import stop, stop_all
from ..harness.redis_cluster import redis_for
from ..harness.scenario import Ctx, Family, Scenario
from ..harness.wire import open_session, read_response, request_headers, request_message, verify

VALGRIND_HINT = "valgrind is not installed (`apt-get install -y valgrind`)"
CONNECTIONS = 8
# (warm-up, low n, high n) requests: the peers cost ten times more per request under valgrind.
COUNTS = {"bare": (200, 300, 1300), "fast": (200, 300, 1300), "slow": (50, 100, 300)}
SMOKE_COUNTS = (10, 20, 60)
EVENTS = ("Ir", "I1mr", "D1mr", "D1mw")
REPLY_TIMEOUT = 120.0  # seconds for one answer (valgrind runs a server 20-50 times slower)


def _summary(path: Path) -> dict[str, int]:
    """The totals line of a cachegrind output file, by event name."""
    names: list[str] = []
    totals: list[int] = []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("summary:"):
            totals = [int(x) for x in line.split()[1:]]
    if not names or len(names) != len(totals):
        raise ServerFailed(f"no totals in {path.name}")
    return dict(zip(names, totals, strict=True))


def _raw_request(url: str, body: bytes, headers: dict[str, str]) -> bytes:
    u = httpx.URL(url)
    lines = [f"POST {u.raw_path.decode()} HTTP/1.1", f"Host: {u.host}:{u.port}", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _send_requests(url: str, message: dict[str, Any], headers: dict[str, str], n: int) -> int:
    """Send ``message`` ``n`` times over ``CONNECTIONS`` keep-alive connections, each time with a
    fresh id (a 2025 session must not have two requests with one id in flight) of the same
    length; returns how many were answered 200 (anything else stops the run)."""
    u = httpx.URL(url)
    ids = iter(range(100_000, 100_000 + n))
    ok = 0

    async def worker() -> None:
        nonlocal ok
        reader, writer = await asyncio.open_connection(u.host, u.port)
        try:
            for rid in ids:
                writer.write(_raw_request(url, orjson.dumps({**message, "id": rid}), headers))
                try:
                    status, _, body = await asyncio.wait_for(read_response(reader), REPLY_TIMEOUT)
                except TimeoutError:
                    raise ServerFailed(f"no answer within {REPLY_TIMEOUT:.0f} s under valgrind") from None
                if status != 200:
                    raise ServerFailed(f"HTTP {status} under valgrind: {body[:200]!r}")
                ok += 1
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(CONNECTIONS)))
    return ok


def _count_once(ctx: Ctx, sc: Scenario, server: Server, env: dict[str, str], warm: int, n: int,
                tag: str) -> dict[str, int]:
    """One server under cachegrind: warm-up, ``n`` requests, stop; the totals."""
    out = ctx.workdir / f"cachegrind-{sc.id}-{server.key}-{tag}.out"
    valgrind = shutil.which("valgrind")
    assert valgrind is not None
    wrapper = [valgrind, "--tool=cachegrind", "--cache-sim=yes", f"--cachegrind-out-file={out}"]
    run = start_server(server, env, ctx.tools, ctx.workdir, ctx.python, timeout=300.0, wrapper=wrapper)
    try:
        with httpx.Client(timeout=120.0) as client:
            sid = open_session(client, run.url, sc.log_level)["session_id"] if sc.wire == "legacy" else None
            headers = request_headers(sc, sid)
            message = request_message(sc)
            verify(sc, client.post(run.url, content=orjson.dumps(message), headers=headers))
        asyncio.run(_send_requests(run.url, message, headers, warm))
        answered = asyncio.run(_send_requests(run.url, message, headers, n))
        if answered != n:
            raise ServerFailed(f"{answered} of {n} requests answered")
    finally:
        stop(run.proc, timeout=120.0)  # SIGTERM: uvicorn shuts down, valgrind writes its file
    return _summary(out)


def count_server(ctx: Ctx, sc: Scenario, server: Server, env: dict[str, str],
                 counts: tuple[int, int, int]) -> dict[str, Any]:
    """Per-request figures of one server: two runs at once (the counts do not depend on timing)."""
    warm, lo, hi = counts
    pool = ThreadPoolExecutor(2)
    try:
        f_lo = pool.submit(_count_once, ctx, sc, server, env, warm, lo, "lo")
        f_hi = pool.submit(_count_once, ctx, sc, server, env, warm, hi, "hi")
        a, b = f_lo.result(), f_hi.result()
    except BaseException:
        stop_all()  # on a failure or Ctrl-C: the other run's client then fails at once
        raise
    finally:
        pool.shutdown(wait=True)
    per = {e: (b[e] - a[e]) / (hi - lo) for e in EVENTS if e in a and e in b}
    return {"status": "ok", "ir": per["Ir"], "i1_misses": per.get("I1mr"),
            "d1_misses": (per.get("D1mr") or 0) + (per.get("D1mw") or 0), "requests": (lo, hi), "warmup": warm}


def count_seeds(ctx: Ctx, sc: Scenario, server: Server, env: dict[str, str], counts: tuple[int, int, int],
                seeds: tuple[int, ...]) -> dict[str, Any]:
    """:func:`count_server` once per hash seed: the median of each figure, and every seed's count.

    Python hashes strings with a random key per process, which moves dict probe sequences and so
    a request's instructions by up to about 0.5 %: as much as a change being measured. A fixed
    set of seeds makes a count repeatable, and their median makes it less one seed's luck."""
    runs = [count_server(ctx, sc, server, {**env, "PYTHONHASHSEED": str(seed)}, counts) for seed in seeds]
    res = dict(runs[0])
    for k in ("ir", "i1_misses", "d1_misses"):
        res[k] = statistics.median(r[k] for r in runs if r[k] is not None) if any(
            r[k] is not None for r in runs) else None
    res["per_seed"] = {str(seed): r["ir"] for seed, r in zip(seeds, runs, strict=True)}
    return res


def run(ctx: Ctx, sc: Scenario, servers: list[str]) -> dict[str, Any]:
    """Every server of ``sc`` counted; a server that fails is reported, the rest still run. A
    scenario with ``redis`` gets a Redis of its own, which both counting runs share."""
    if shutil.which("valgrind") is None:
        return {key: {"status": "not available", "reason": VALGRIND_HINT} for key in servers}
    with contextlib.ExitStack() as stack:
        redis_url: dict[str, str] = {}
        if sc.redis:
            try:
                redis_url["REDIS_URL"] = stack.enter_context(redis_for(sc.redis)(ctx.tools, ctx.workdir)).url
            except ServerFailed as exc:
                return {key: {"status": "not available", "reason": str(exc)} for key in servers}
        return _count_all(ctx, sc, servers, redis_url)


def _count_all(ctx: Ctx, sc: Scenario, servers: list[str], extra: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in servers:
        server = SERVERS[key]
        env = {**sc.env.get(key, {})}
        counts = SMOKE_COUNTS if ctx.smoke else COUNTS["slow" if server.peers else "fast"]
        try:
            # The peers cost ten times more per request and sit 5-10x away: one seed tells enough.
            seeds = ctx.hash_seeds[:1] if server.peers else ctx.hash_seeds
            res = count_seeds(ctx, sc, server, {**env, **extra}, counts, seeds)
        except ServerFailed as exc:
            log(f"  {sc.id:<17} {key:<11}: FAILED {exc}")
            out[key] = {"status": "failed", "reason": str(exc)}
            continue
        res["env"] = env
        by_seed = ", ".join(f"{seed}: {ir:,.0f}" for seed, ir in res["per_seed"].items())
        log(f"  {sc.id:<17} {key:<11}: {res['ir']:>11,.0f} instructions/request  "
            f"I1 misses {res['i1_misses']:>8,.0f}  D1 misses {res['d1_misses']:>8,.0f}  (hash seeds {by_seed})")
        out[key] = res
    return out


def instruction_ratios(servers: dict[str, Any]) -> dict[str, float]:
    """mcpcore's instructions per request over each other server's (lower is better)."""
    m = servers.get("mcpcore", {})
    if m.get("status") != "ok":
        return {}
    return {k: m["ir"] / r["ir"] for k, r in servers.items() if k != "mcpcore" and r.get("status") == "ok"}


def table(sc: Scenario, servers: dict[str, Any]) -> list[str]:
    """The scenario's markdown table."""
    rows = ["| Server | instructions / request | mcpcore / this | I1 misses / request | D1 misses / request "
            "| requests counted | per hash seed |", "|---|---:|---:|---:|---:|---|---|"]
    rat = instruction_ratios(servers)
    for key, r in servers.items():
        name = label(key)
        if r.get("status") != "ok":
            rows.append(f"| {name} | **{r.get('status')}**: {r.get('reason', '')} ||||||")
            continue
        lo, hi = r["requests"]
        vs = f"{rat[key]:.2f}x" if key in rat else "—"
        seeds = ", ".join(f"{ir:,.0f}" for ir in r.get("per_seed", {}).values())
        rows.append(f"| {name} | {r['ir']:,.0f} | {vs} | {r['i1_misses']:,.0f} | {r['d1_misses']:,.0f} | "
                    f"{hi} - {lo} after {r['warmup']} | {seeds} |")
    return rows


FAMILY = Family(kind="instructions", run=run, table=table)
