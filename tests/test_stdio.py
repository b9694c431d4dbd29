"""stdio: newline-delimited JSON, both eras per message, logs on stderr, clean exit on EOF."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from .servers import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}
EVERY_VERSION = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


class Proc:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def send(self, msg: Any) -> None:
        assert self.proc.stdin is not None
        data = msg if isinstance(msg, bytes) else orjson.dumps(msg)
        self.proc.stdin.write(data + b"\n")
        await self.proc.stdin.drain()

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 10)
        assert line, "stdout closed"
        return dict(orjson.loads(line))

    async def until(self, rid: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        seen = []
        while True:
            m = await self.recv()
            if m.get("id") == rid and "method" not in m:
                return m, seen
            seen.append(m)


@pytest.fixture
async def stdio() -> AsyncIterator[Proc]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio",
        cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        yield Proc(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_legacy_session_over_stdio(stdio: Proc) -> None:
    await stdio.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    r, _ = await stdio.until(1)
    assert r["result"]["protocolVersion"] == "2025-06-18"
    await stdio.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    await stdio.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 5}}})
    r, notes = await stdio.until(2)
    assert [n["params"]["progress"] for n in notes] == [0, 50, 100]
    assert r["result"]["content"][0]["text"] == "Tool with progress executed successfully"


async def test_modern_requests_and_errors_over_stdio(stdio: Proc) -> None:
    await stdio.send({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": MODERN_META}})
    r, _ = await stdio.until("d")
    assert r["result"]["supportedVersions"] == EVERY_VERSION and r["result"]["resultType"] == "complete"
    await stdio.send(b"{not json")
    r = await stdio.recv()
    assert r["error"]["code"] == -32700 and "id" not in r
    await stdio.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "_meta": {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}, "name": "x"}})
    r, _ = await stdio.until(3)
    assert r["error"]["code"] == -32022
    assert r["error"]["data"]["supported"] == EVERY_VERSION and r["error"]["data"]["requested"] == "1999-01-01"


@pytest.mark.parametrize("asked", ["2025-11-25", "2026-07-28"])
async def test_initialize_carrying_the_envelope_opens_the_2025_session(stdio: Proc, asked: str) -> None:
    await stdio.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"},
        "_meta": {**MODERN_META, "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}})
    r, _ = await stdio.until(1)
    assert r["result"]["protocolVersion"] == "2025-11-25" and "resultType" not in r["result"]
    await stdio.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    await stdio.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    r, _ = await stdio.until(2)
    assert "resultType" not in r["result"] and r["result"]["tools"]
    await stdio.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": MODERN_META}})
    r, _ = await stdio.until(3)
    assert r["result"]["resultType"] == "complete"  # the envelope still picks 2026-07-28 in the process


async def test_initialize_with_only_the_envelope_is_a_removed_2026_method(stdio: Proc) -> None:
    await stdio.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"_meta": MODERN_META}})
    r, _ = await stdio.until(1)
    assert r["error"]["code"] == -32601


async def test_cancellation_and_eof_exit(stdio: Proc) -> None:
    await stdio.send({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
        "_meta": MODERN_META, "notifications": {"toolsListChanged": True}}})
    ack = await stdio.recv()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    await stdio.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "L"}})
    await stdio.send({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": MODERN_META}})
    r, extra = await stdio.until(9)
    assert "tools" in r["result"] and extra == []
    assert stdio.proc.stdin is not None
    stdio.proc.stdin.close()
    assert await asyncio.wait_for(stdio.proc.wait(), 10) == 0
    assert stdio.proc.stderr is not None
    err = await stdio.proc.stderr.read()
    assert b'"level":"info"' in err  # logs go to stderr as JSON lines
