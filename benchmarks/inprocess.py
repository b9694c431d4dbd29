"""Per-request cost of the echo servers' apps alone, with no HTTP server around them.

    .venv/bin/python -m benchmarks.inprocess [--servers mcpcore,mcpcore_layers,starlette,asgi] [--eras 2026,2025]
                                             [--requests 50000] [--pollute-kb 0]

Each app is called directly as ASGI on uvloop with a prepared scope, the tools/call body the
harness sends and a ``send`` that keeps the messages: what is left is the framework's own work per
request. ``--pollute-kb N`` writes one byte per cache line of an N KB buffer before every call
(not timed), a rough way to see how each app's cost grows when a call starts with cold caches, as
it does in a server where uvicorn and the kernel run between requests (noisy on a shared machine:
repeat it). Only the calls are timed, each server and era in its own process. mcpcore (also
with three middleware layers and a ``Depends``: ``mcpcore_layers``), bare Starlette and pure ASGI
(the project's .venv); the peers need their own virtualenv and are measured by ``benchmarks.run``.
:mod:`benchmarks.budget` counts instructions per request with this module's :func:`call`.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

SERVERS_DIR = Path(__file__).parent / "servers"  # not resolved: benchmarks.budget runs the code through a link
MODULES = {"mcpcore": "mcpcore_echo", "mcpcore_layers": "mcpcore_layered", "starlette": "starlette_echo",
           "asgi": "asgi_echo"}
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}
BASE_HEADERS = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                (b"accept", b"application/json, text/event-stream")]

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def load_app(server: str) -> App:
    if str(SERVERS_DIR) not in sys.path:
        sys.path.insert(0, str(SERVERS_DIR))
    module = __import__(MODULES[server])
    app: App = module.app
    return app


async def call(app: App, body: bytes, headers: list[tuple[bytes, bytes]]) -> list[dict[str, Any]]:
    """One POST /mcp through ``app``; returns what it sent."""
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "state": {}}
    await app(scope, receive, send)
    return sent


async def request_for(app: App, era: str) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The body and headers of the harness's tools/call on ``era`` (opening a session for 2025)."""
    if era == "2026":
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "hello"}, "_meta": MODERN_META}})
        return body, [*BASE_HEADERS, (b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", b"tools/call"),
                      (b"mcp-name", b"echo")]
    init = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    sent = await call(app, init, list(BASE_HEADERS))
    sid = dict(sent[0]["headers"]).get(b"mcp-session-id", b"0" * 64)  # the bare endpoints check nothing
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hello"}}})
    return body, [*BASE_HEADERS, (b"mcp-protocol-version", b"2025-11-25"), (b"mcp-session-id", sid)]


async def measure(server: str, era: str, requests: int, pollute_kb: int) -> float:
    """Microseconds per call (the median of five slices of ``requests / 5`` calls)."""
    app = load_app(server)
    body, headers = await request_for(app, era)
    for _ in range(2000):
        sent = await call(app, body, headers)
    if sent[0]["status"] != 200:
        raise RuntimeError(f"{server} {era}: HTTP {sent[0]['status']}")
    buffer = bytearray(pollute_kb * 1024)
    lines = len(buffer[::64])
    stamp = b"\x01" * lines
    clock = time.perf_counter
    slices = []
    per_slice = max(1, requests // 5)
    for _ in range(5):
        spent = 0.0
        for _ in range(per_slice):
            if lines:
                buffer[::64] = stamp
            start = clock()
            await call(app, body, headers)
            spent += clock() - start
        slices.append(spent / per_slice * 1e6)
    return sorted(slices)[2]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--servers", default="mcpcore,starlette,asgi")
    p.add_argument("--eras", default="2026,2025")
    p.add_argument("--requests", type=int, default=50_000)
    p.add_argument("--pollute-kb", type=int, default=0)
    p.add_argument("--one", nargs=2, metavar=("SERVER", "ERA"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        import logging

        import uvloop

        logging.disable(logging.WARNING)  # the startup warnings of an app without keys
        print(f"{uvloop.run(measure(args.one[0], args.one[1], args.requests, args.pollute_kb)):.2f}")
        return 0
    servers = [s for s in args.servers.split(",") if s]
    for s in servers:
        if s not in MODULES:
            p.error(f"unknown server {s!r} (one of {', '.join(MODULES)})")
    print(f"| server | era | us per call (pollute {args.pollute_kb} KB) |")
    print("|---|---|---:|")
    for era in [e for e in args.eras.split(",") if e]:
        for s in servers:  # each in a fresh process: one app's heap must not shape another's
            out = subprocess.run([sys.executable, "-m", "benchmarks.inprocess", "--one", s, era, "--requests",
                                  str(args.requests), "--pollute-kb", str(args.pollute_kb)],
                                 capture_output=True, text=True, cwd=SERVERS_DIR.parent.parent, check=True)
            print(f"| {s} | {era} | {out.stdout.strip()} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
