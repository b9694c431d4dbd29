"""Streams under a real uvicorn: incremental SSE delivery, keep-alives, disconnects per era."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import orjson
import pytest

from mcpcore.testing import McpTestClient, parse_sse

from .servers import run_server, server_log

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODERN_H = {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "ticker"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "info"}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with run_server("tests.apps.streaming:app", env={"MCP_HTTP_SSE_KEEPALIVE_MS": "100", "MCP_LOG_LEVEL": "info"}) as u:
        yield u


async def _status(url: str, run: str) -> str:
    async with McpTestClient(url=url, era="modern") as c:
        r = await c.call_tool("status", {"run": run})
        return str(r["structuredContent"])


async def test_events_arrive_as_they_are_sent(url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"_meta": META, "name": "ticker", "arguments": {"run": "inc", "ticks": 6}}}
    stamps: list[float] = []
    async with httpx.AsyncClient(timeout=10) as http, http.stream("POST", url, content=orjson.dumps(body),
                                                                 headers=MODERN_H) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        async for ev in parse_sse(resp.aiter_lines()):
            stamps.append(time.monotonic())
            msg = orjson.loads(ev["data"])
            if msg.get("id") == 1:
                break
    assert len(stamps) == 7
    assert stamps[-1] - stamps[0] > 0.2  # spread out in time, not buffered until the end


async def test_keepalive_comments_on_a_quiet_stream(url: str) -> None:
    body = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
            "params": {"_meta": META, "notifications": {"toolsListChanged": True}}}
    h = {**MODERN_H, "mcp-method": "subscriptions/listen"}
    del h["mcp-name"]
    comments = 0
    async with httpx.AsyncClient(timeout=10) as http, http.stream("POST", url, content=orjson.dumps(body),
                                                                 headers=h) as resp:
        start = time.monotonic()
        async for line in resp.aiter_lines():
            if line.startswith(":"):
                comments += 1
            if comments >= 2 or time.monotonic() - start > 3:
                break
    assert comments >= 2


async def test_modern_disconnect_cancels_the_handler(url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"_meta": META, "name": "ticker", "arguments": {"run": "m1", "ticks": 200}}}
    async with httpx.AsyncClient(timeout=10) as http, http.stream("POST", url, content=orjson.dumps(body),
                                                                 headers=MODERN_H) as resp:
        async for _ in parse_sse(resp.aiter_lines()):
            break
    for _ in range(100):
        state = await _status(url, "m1")
        if state != "running":
            break
        await asyncio.sleep(0.05)
    assert state == "cancelled:True"


async def test_legacy_disconnect_is_not_cancellation(url: str) -> None:
    async with McpTestClient(url=url) as c:
        await c.request("logging/setLevel", {"level": "info"})
        body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "ticker", "arguments": {"run": "l1", "ticks": 8}}}
        async with c.http.stream("POST", url, content=orjson.dumps(body), headers=c.headers()) as resp:
            async for _ in parse_sse(resp.aiter_lines()):
                break
        for _ in range(100):
            r = await c.call_tool("status", {"run": "l1"})
            if r["structuredContent"]["result"] != "running":
                break
            await asyncio.sleep(0.05)
        assert r["structuredContent"]["result"] == "completed"


async def test_leaving_a_resumed_stream_logs_no_traceback(url: str) -> None:
    """A client that drops a ``Last-Event-ID`` resumption while the server waits for the
    stream's next event: the pending read is ended before the buffer's reader is closed (no
    "aclose(): asynchronous generator is already running")."""
    async with McpTestClient(url=url) as c:
        await c.request("logging/setLevel", {"level": "info"})
        body = {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": {"name": "ticker", "arguments": {"run": "r17", "ticks": 60}}}
        async with c.http.stream("POST", url, content=orjson.dumps(body), headers=c.headers()) as resp:
            events = parse_sse(resp.aiter_lines())
            await events.__anext__()  # the priming event
            last = (await events.__anext__())["id"]
        for _ in range(5):  # each resumption replays, then waits for the next tick: dropped meanwhile
            resp, events = await c.open_stream(headers={"last-event-id": last})
            last = (await asyncio.wait_for(events.__anext__(), 5))["id"]
            await resp.aclose()
            await asyncio.sleep(0.02)
        for _ in range(100):
            if (await c.call_tool("status", {"run": "r17"}))["structuredContent"]["result"] != "running":
                break
            await asyncio.sleep(0.05)
    log = server_log(url)
    assert "already running" not in log and "Traceback" not in log, log[log.find("Traceback") - 200:][:3000]
