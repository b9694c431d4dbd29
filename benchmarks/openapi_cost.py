"""A tool generated from a FastAPI route (mcpcore.openapi, called in process) against hand-written
tools doing the same, per tools/call: instructions (valgrind, user space) and calls per second.

Three tools answer ``{"id", "name", "price", "detail"}`` for an item id:

- ``generated``: ``include_fastapi`` made it from the route ``GET /items/{item_id}``; arguments
  checked against the generated schema, the request built and sent through the FastAPI app in
  process, the JSON answer checked against the output schema.
- ``wrapper``: the tool one would write by hand to call the same route: typed arguments, the same
  in-process transport, ``response.json()`` returned.
- ``direct``: the route's logic itself as a tool (no HTTP inside): the floor.

    .venv/bin/python -m benchmarks.openapi_cost                     # the table (run by `make bench`)
    .venv/bin/python -m benchmarks.openapi_cost --no-instructions   # calls per second only
    PYTHONHASHSEED=0 valgrind --tool=callgrind .venv/bin/python -m benchmarks.openapi_cost \\
        --one generated --requests 300                             # one run, as the table runs each

Calls go to the ASGI app directly on uvloop (``benchmarks.inprocess``), 2026-07-28 requests. An
instruction count is the difference of two runs' totals (``--low`` and ``--high`` calls, after
the same warm-up) over the difference of the counts, so start-up and shutdown cancel.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from .inprocess import BASE_HEADERS, MODERN_META, call

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("generated", "wrapper", "direct")
WARM = 100


def build() -> Any:
    """The FastAPI app with the MCP server mounted at /mcp, serving the three tools."""
    import httpx
    from fastapi import FastAPI

    from mcpcore import McpApp, Settings, tool
    from mcpcore.openapi import Route
    from mcpcore.openapi.call import AppTransport

    items = {i: {"id": i, "name": f"item {i}", "price": i * 1.5} for i in range(1, 100)}
    mcp = McpApp("bench-openapi", "1.0", settings=Settings.from_env({"MCP_LOG_LEVEL": "warning"}))
    api = FastAPI(title="Items")

    def lookup(item_id: int, detail: bool) -> dict[str, Any]:
        return {**items[item_id], "detail": "a longer description" if detail else None}

    @api.get("/items/{item_id}", summary="One item, by its id")
    async def get_item(item_id: int, detail: bool = False) -> dict[str, Any]:
        return lookup(item_id, detail)

    http = httpx.AsyncClient(transport=AppTransport(api), base_url="http://app.local")

    @tool(name="wrapper")
    async def wrapper(item_id: int, detail: bool = False) -> dict[str, Any]:
        """One item, by its id (through the API, written by hand)."""
        response = await http.get(f"/items/{item_id}", params={"detail": "true" if detail else "false"})
        response.raise_for_status()
        return dict(response.json())

    @tool(name="direct")
    async def direct(item_id: int, detail: bool = False) -> dict[str, Any]:
        """One item, by its id (the route's logic itself)."""
        return lookup(item_id, detail)

    mcp.include(wrapper, direct)
    mcp.include_fastapi(api, routes=[Route("get_item", name="generated")])
    api.mount("/mcp", mcp)
    return api, mcp


def request(name: str) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": {"item_id": 7, "detail": True}, "_meta": MODERN_META}})
    return body, [*BASE_HEADERS, (b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", b"tools/call"),
                  (b"mcp-name", name.encode())]


async def _mounted(api: Any, body: bytes, headers: list[tuple[bytes, bytes]]) -> list[dict[str, Any]]:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope = {**scope, "path": "/mcp/", "raw_path": b"/mcp/"}
        await api(scope, receive, send)

    return await call(app, body, headers)


async def run(name: str, requests: int) -> None:
    api, mcp = build()
    await mcp.startup()
    body, headers = request(name)
    for _ in range(WARM + requests):
        sent = await _mounted(api, body, headers)
    answer = orjson.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
    if sent[0]["status"] != 200 or answer["result"].get("isError") or \
            answer["result"]["structuredContent"]["name"] != "item 7":
        raise SystemExit(f"{name}: HTTP {sent[0]['status']}: {answer!r:.300}")
    await mcp.shutdown()


async def rate(name: str, requests: int) -> float:
    """Calls per second (the median of five slices)."""
    api, mcp = build()
    await mcp.startup()
    body, headers = request(name)
    for _ in range(WARM * 5):
        await _mounted(api, body, headers)
    slices = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(max(1, requests // 5)):
            await _mounted(api, body, headers)
        slices.append(max(1, requests // 5) / (time.perf_counter() - start))
    await mcp.shutdown()
    return sorted(slices)[2]


def _total(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no totals in {path}")


def counted(name: str, requests: int) -> int:
    """Instructions of one run under callgrind."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (`apt-get install -y valgrind`)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "MCP_LOG_LEVEL": "warning"}
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
                        "benchmarks.openapi_cost", "--one", name, "--requests", str(requests)],
                       cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return _total(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--one", choices=TOOLS, help="one run of one tool (what the table runs under valgrind)")
    p.add_argument("--requests", type=int, default=3000, help="calls per run (the rate, or --one)")
    p.add_argument("--low", type=int, default=100)
    p.add_argument("--high", type=int, default=300)
    p.add_argument("--no-instructions", action="store_true", help="calls per second only")
    args = p.parse_args(argv)
    import logging

    import uvloop

    logging.disable(logging.WARNING)
    if args.one:
        uvloop.run(run(args.one, args.requests))
        return 0
    rates = {name: uvloop.run(rate(name, args.requests)) for name in TOOLS}
    cost = {} if args.no_instructions else {
        name: (counted(name, args.high) - counted(name, args.low)) / (args.high - args.low) for name in TOOLS}
    print(f"| tool | calls/s in process | instructions/call ({args.low} and {args.high} calls) | vs direct |")
    print("|---|---:|---:|---:|")
    for name in TOOLS:
        instr = f"{cost[name]:,.0f}" if cost else "-"
        ratio = f"{cost[name] / cost['direct']:.2f}x" if cost else f"{rates['direct'] / rates[name]:.2f}x (time)"
        print(f"| {name} | {rates[name]:,.0f} | {instr} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
