"""Idle sessions: the RSS that ``--sessions`` idle 2025 sessions add to a server (memory store).

The server is warmed by opening and deleting 20 sessions; then N sessions are opened over 32
keep-alive connections and left idle, RSS is read before and after, and a sample of the sessions
is checked to still answer.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import orjson

from ..harness.catalog import SERVERS, Server, label
from ..harness.config import ACCEPT, LEGACY, ServerFailed, log
from ..harness.launch import start_server
from ..harness.processes import stop
from ..harness.report import cell, fmt
from ..harness.sampling import proc_status, wait_quiet
from ..harness.scenario import Ctx, Family, Scenario
from ..harness.wire import echo_call, open_session, read_response


async def _open_sessions(url: str, n: int, concurrency: int) -> dict[str, Any]:
    """Open ``n`` 2025 sessions over ``concurrency`` keep-alive connections.

    A minimal asyncio HTTP/1.1 client: httpx costs ~1 ms of client CPU per request, which made
    the client, not the server, the bottleneck of this scenario.
    """
    parsed = httpx.URL(url)
    host, port, path = parsed.host, parsed.port or 80, parsed.raw_path.decode()
    init = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'

    def request(body: bytes, sid: str | None = None) -> bytes:
        extra = f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {LEGACY}\r\n" if sid else ""
        return (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                f"Accept: {ACCEPT}\r\n{extra}Content-Length: {len(body)}\r\n\r\n").encode() + body

    init_request = request(init)
    ids: list[str] = []
    refused: dict[int, int] = {}
    first_refusal: list[str] = []
    counter = iter(range(n))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for _ in counter:
                writer.write(init_request)
                status, headers, body = await read_response(reader)
                sid = headers.get("mcp-session-id")
                if status != 200 or not sid:
                    refused[status] = refused.get(status, 0) + 1
                    if not first_refusal:
                        first_refusal.append(f"HTTP {status}: {body[:160].decode(errors='replace')}")
                else:
                    writer.write(request(note, sid))
                    status, headers, body = await read_response(reader)
                    if status in (200, 202):
                        ids.append(sid)
                    else:
                        refused[status] = refused.get(status, 0) + 1
                if headers.get("connection", "").lower() == "close":
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, port)
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return {"ids": ids, "refused": refused, "first_refusal": first_refusal[0] if first_refusal else None}


def _alive(client: httpx.Client, url: str, sid: str) -> bool:
    msg = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": echo_call()}
    r = client.post(url, content=orjson.dumps(msg), headers={"Content-Type": "application/json", "Accept": ACCEPT,
                                                             "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
    return r.status_code == 200


def sessions_once(ctx: Ctx, sc: Scenario, server: Server) -> dict[str, Any]:
    """One server: warm it, open ``ctx.sessions`` sessions, RSS before and after, a liveness sample."""
    run = start_server(server, dict(sc.env.get(server.key, {})), ctx.tools, ctx.workdir, ctx.python)
    try:
        with httpx.Client(timeout=30, verify=False, trust_env=False) as client:
            for _ in range(20):  # warm the session paths, then give the sessions back
                sid = open_session(client, run.url, None)["session_id"]
                if not _alive(client, run.url, sid):
                    raise ServerFailed("a fresh session did not answer tools/call")
                client.delete(run.url, headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
        time.sleep(ctx.settle)
        before = proc_status(run.proc.pid, "VmRSS") or 0
        t0 = time.monotonic()
        opened = asyncio.run(_open_sessions(run.url, ctx.sessions, 32))
        elapsed = time.monotonic() - t0
        time.sleep(2 * ctx.settle)
        after = proc_status(run.proc.pid, "VmRSS") or 0
        ids = opened["ids"]
        sample = [ids[i] for i in sorted({0, len(ids) // 4, len(ids) // 2, 3 * len(ids) // 4, len(ids) - 1})] \
            if ids else []
        with httpx.Client(timeout=30, verify=False, trust_env=False) as client:
            alive = sum(_alive(client, run.url, sid) for sid in sample)
        if run.proc.poll() is not None:
            raise ServerFailed(f"server died: {run.log_tail()}")
    finally:
        stop(run.proc)
    n = len(ids)
    delta = (after - before) / 2**20
    return {"requested": ctx.sessions, "opened": n, "refused": opened["refused"],
            "first_refusal": opened["first_refusal"], "rss_before_mb": before / 2**20, "rss_after_mb": after / 2**20,
            "delta_mb": delta, "kb_per_session": (after - before) / 1024 / n if n else None,
            "alive_sample": f"{alive}/{len(sample)}", "open_seconds": elapsed}


def run(ctx: Ctx, sc: Scenario, servers: list[str]) -> dict[str, Any]:
    """Every selected server ``--session-repeat`` times (``--repeat`` when 0); the median by RSS."""
    results: dict[str, list[dict[str, Any]]] = {k: [] for k in servers}
    failed: dict[str, str] = {}
    for r in range(ctx.session_repeat or ctx.repeat):
        for key in servers:
            if key in failed:
                continue
            wait_quiet(ctx.load.quiet_wait)
            try:
                res = sessions_once(ctx, sc, SERVERS[key])
            except ServerFailed as exc:
                failed[key] = str(exc)
                log(f"  {sc.id:<17} {key:<11} #{r + 1}: FAILED {exc}")
                continue
            results[key].append(res)
            log(f"  {sc.id:<17} {key:<11} #{r + 1}: {res['opened']:,} sessions (refused {res['refused'] or 0}) "
                f"RSS {res['rss_before_mb']:.1f} -> {res['rss_after_mb']:.1f} MB (+{res['delta_mb']:.1f} MB, "
                f"{res['kb_per_session'] or 0:.1f} KB/session) alive {res['alive_sample']} "
                f"in {res['open_seconds']:.1f} s")
    out: dict[str, Any] = {}
    for key in servers:
        if key in failed:
            out[key] = {"status": "failed", "reason": failed[key]}
            continue
        rs = results[key]
        mid = sorted(rs, key=lambda x: x["delta_mb"])[len(rs) // 2]
        out[key] = {"status": "ok", **mid, "delta_mb_all": [x["delta_mb"] for x in rs],
                    "env": dict(sc.env.get(key, {}))}
    return out


def table(sc: Scenario, servers: dict[str, Any]) -> list[str]:
    """One row per server: sessions opened and refused, RSS before and after, per session."""
    out = ["| Server | sessions opened | refused | RSS before MB | RSS after MB | Δ MB | KB/session | "
           "alive (sample) |",
           "|---|---:|---|---:|---:|---:|---:|---|"]
    for key, r in servers.items():
        name = label(key)
        if r.get("status") != "ok":
            out.append(f"| {name} | {r.get('status')}: {cell(r.get('reason', ''))} |||||||")
            continue
        refused = ", ".join(f"{n}x HTTP {c}" for c, n in (r["refused"] or {}).items()) or "0"
        out.append(f"| {name} | {r['opened']:,} / {r['requested']:,} | {refused} | {r['rss_before_mb']:.1f} | "
                   f"{r['rss_after_mb']:.1f} | {r['delta_mb']:.1f} | {fmt(r['kb_per_session'], '.1f')} | "
                   f"{r['alive_sample']} |")
    for key, r in servers.items():
        if r.get("first_refusal"):
            out.append(f"\n{key}: first refusal: `{r['first_refusal']}`")
    return out


FAMILY = Family(kind="sessions", run=run, table=table)
