"""Soak: does a server's memory stay flat under sessions that come and go?

    .venv/bin/python -m benchmarks.soak [--minutes 10] [--clients 16] [--sample 15] [--out docs/bench]

Starts the example server (``mcpcore run examples.everything:app``, in-memory stores) on a free
loopback port. Each client loops until the time is up: it opens a 2025 session, calls a tool
that logs three lines (so every answer is SSE and lands in the event buffer) three times, then
deletes the session or, every other time, abandons it. Abandoned sessions expire after
``--idle-ms`` (60 s by default, so the run reaches its steady state within its first two
minutes). The server's RSS is sampled every ``--sample`` seconds; the verdict is whether RSS
after the first two minutes grows by at most 5 % to the end. Writes ``soak.md`` and
``soak.json`` to ``--out``. Every request goes to 127.0.0.1 and the run stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
ACCEPT = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}


@dataclass
class Tally:
    sessions: int = 0
    deleted: int = 0
    abandoned: int = 0
    calls: int = 0
    errors: int = 0
    samples: list[tuple[float, float]] = field(default_factory=list)  # (seconds, RSS MB)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def client(http: httpx.AsyncClient, url: str, tally: Tally, deadline: float, n: int) -> None:
    i = 0
    while time.monotonic() < deadline:
        i += 1
        try:
            r = await http.post(url, json=INIT, headers=ACCEPT)
            sid = r.headers["mcp-session-id"]
            h = {**ACCEPT, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
            tally.sessions += 1
            for k in range(3):
                r = await http.post(url, json={"jsonrpc": "2.0", "id": k + 1, "method": "tools/call", "params": {
                    "name": "test_tool_with_logging", "arguments": {}}}, headers=h)
                tally.calls += 1
                if r.status_code != 200 or '"result"' not in r.text:
                    tally.errors += 1
            if (i + n) % 2:
                await http.delete(url, headers=h)
                tally.deleted += 1
            else:
                tally.abandoned += 1
        except (httpx.HTTPError, KeyError):
            tally.errors += 1


async def sampler(pid: int, tally: Tally, start: float, deadline: float, every: float) -> None:
    while True:
        tally.samples.append((round(time.monotonic() - start, 1), round(rss_mb(pid), 1)))
        if time.monotonic() + every > deadline:
            return
        await asyncio.sleep(every)


def start_server(idle_ms: int) -> tuple[subprocess.Popen[bytes], str]:
    """The example server on a free loopback port, once ``/healthz`` answers."""
    port = free_port()
    env = {**os.environ, "MCP_STATEFUL_SESSION_STALE_TIMEOUT_MS": str(idle_ms), "MCP_LOG_LEVEL": "warning"}
    proc = subprocess.Popen([sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--host", "127.0.0.1",
                             "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            if httpx.get(base + "/healthz", timeout=0.5).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the example server did not start")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


async def load(pid: int, base: str, minutes: float, clients: int, every: float) -> Tally:
    tally = Tally()
    start = time.monotonic()
    deadline = start + minutes * 60
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        await asyncio.gather(sampler(pid, tally, start, deadline, every),
                             *(client(http, base + "/mcp", tally, deadline, n) for n in range(clients)))
    return tally


def soak(minutes: float, clients: int, every: float, idle_ms: int) -> tuple[Tally, dict[str, str]]:
    """Run the soak; the tally and the server settings it ran with."""
    proc, base = start_server(idle_ms)
    try:
        tally = asyncio.run(load(proc.pid, base, minutes, clients, every))
    finally:
        stop(proc)
    return tally, {"MCP_STATEFUL_SESSION_STALE_TIMEOUT_MS": str(idle_ms)}


def verdict(tally: Tally, settle_s: float = 120.0) -> tuple[float | None, bool]:
    """RSS growth from the first sample after ``settle_s`` to the last, and whether it is ≤ 5 %."""
    after = [mb for t, mb in tally.samples if t >= settle_s]
    if len(after) < 2:
        return None, False
    growth = (after[-1] - after[0]) / after[0]
    return growth, growth <= 0.05


def report(tally: Tally, env: dict[str, str], minutes: float, clients: int, out: Path) -> str:
    growth, ok = verdict(tally)
    lines = [
        "# Soak: memory under sessions that come and go",
        "",
        f"`python -m benchmarks.soak --minutes {minutes:g} --clients {clients}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: the example server with in-memory stores, "
        f"{', '.join(f'{k}={v}' for k, v in env.items())}. "
        "Each client opens a 2025 session, calls a tool that logs three lines (answered over SSE, "
        "buffered for resumption) three times, then deletes the session or abandons it.",
        "",
        f"Sessions {tally.sessions:,} ({tally.deleted:,} deleted, {tally.abandoned:,} abandoned), "
        f"calls {tally.calls:,}, errors {tally.errors}.",
        "",
        "| seconds | RSS MB |",
        "|---:|---:|",
        *(f"| {t:g} | {mb:.1f} |" for t, mb in tally.samples),
        "",
        (f"RSS growth after the first two minutes: {growth * 100:+.1f} % ({'met' if ok else 'MISSED'}: at most +5 %)."
         if growth is not None else "The run was shorter than two minutes: no verdict."),
        "",
    ]
    text = "\n".join(lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / "soak.md").write_text(text, encoding="utf-8")
    (out / "soak.json").write_text(json.dumps({"tally": asdict(tally), "env": env, "growth": growth, "met": ok},
                                              indent=1), encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--sample", type=float, default=15.0, help="seconds between RSS samples")
    p.add_argument("--idle-ms", type=int, default=60_000, help="idle expiry of abandoned sessions")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "bench")
    args = p.parse_args(argv)
    tally, env = soak(args.minutes, args.clients, args.sample, args.idle_ms)
    print(report(tally, env, args.minutes, args.clients, args.out))
    return 0 if tally.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
