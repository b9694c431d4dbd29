"""An app served over stdio in this process: its stdin fed and its stdout read through pipes."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import orjson

from mcpcore import McpApp

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


class _Out:
    """stdout for the server: each written line lands on an asyncio queue."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self.loop = loop
        self.queue = queue

    def write(self, data: bytes) -> None:
        for line in data.splitlines():
            if line.strip():
                self.loop.call_soon_threadsafe(self.queue.put_nowait, orjson.loads(line))

    def flush(self) -> None:
        pass


class StdioSession:
    """``async with StdioSession(app) as s``: send requests and notifications, read answers."""

    modern_meta = MODERN_META

    def __init__(self, app: McpApp) -> None:
        self.app = app
        self.reader = asyncio.StreamReader()
        self.out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.seen: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> StdioSession:
        self._task = asyncio.get_running_loop().create_task(
            self.app.serve_stdio(self.reader, _Out(asyncio.get_running_loop(), self.out)))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.reader.feed_eof()
        if self._task is not None:
            await asyncio.wait_for(self._task, 10)

    def send(self, msg: dict[str, Any]) -> None:
        self.reader.feed_data(orjson.dumps(msg) + b"\n")

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    async def request(self, method: str, params: dict[str, Any] | None = None, *, rid: Any = None) -> dict[str, Any]:
        rid = rid if rid is not None else next(self._ids)
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        return await self.answer(rid)

    async def answer(self, rid: Any) -> dict[str, Any]:
        while True:
            msg = await asyncio.wait_for(self.out.get(), 10)
            if msg.get("id") == rid and "method" not in msg:
                return msg
            self.seen.append(msg)
