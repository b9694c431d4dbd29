"""One POSTed request's outbound channel: plain JSON unless the handler emits first.

The response start is delayed. If the handler finishes without posting anything, the result is
sent as ``application/json``. The first posted notification switches the response to
``text/event-stream``; every later message, and finally the result, is an SSE event. This keeps
the common path as cheap as a plain JSON API.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from .. import _json
from .sse import SseWriter, event

__all__ = ["EventSink", "HttpExchange", "json_response"]

Send = Callable[[dict[str, Any]], Awaitable[None]]
EventSink = Callable[[bytes], Awaitable[str | None]]
"""Stores one outgoing message for replay and returns its SSE event id (``None``: not stored)."""

_JSON = [(b"content-type", b"application/json")]


async def json_response(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    h = [*_JSON, (b"content-length", str(len(body)).encode())]
    if headers:
        h = h + headers
    await send({"type": "http.response.start", "status": status, "headers": h})
    await send({"type": "http.response.body", "body": body})


class HttpExchange:
    """The :class:`~mcpcore.context.Outbound` of one HTTP request."""

    __slots__ = ("_flusher", "_headers", "_keepalive_s", "_queue", "_send", "client_requests", "finished",
                 "sink", "writer")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], keepalive_s: float,
                 sink: EventSink | None = None, client_requests: Any = None) -> None:
        self._send = send
        self._headers = headers
        self._keepalive_s = keepalive_s
        self._queue: deque[bytes] = deque()
        self._flusher: asyncio.Task[None] | None = None
        self.writer: SseWriter | None = None
        self.finished = False
        self.sink = sink
        self.client_requests = client_requests

    @property
    def streaming(self) -> bool:
        return self.writer is not None

    def post(self, message: dict[str, Any]) -> None:
        if self.finished:
            return
        self._queue.append(_json.dumps(message))
        if self._flusher is None:
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        try:
            while self._queue:
                data = self._queue.popleft()
                await self._write(data)
        finally:
            self._flusher = None

    async def _write(self, data: bytes) -> None:
        if self.writer is None:
            self.writer = SseWriter(self._send, self._headers, self._keepalive_s)
        eid = await self.sink(data) if self.sink is not None else None
        await self.writer.write(event(data, eid))

    async def drain(self) -> None:
        while self._flusher is not None:
            await asyncio.shield(self._flusher)

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        if self.client_requests is None:
            from ..errors import JsonRpcErrorCode, McpError

            raise McpError(JsonRpcErrorCode.InvalidRequest,
                           "This request has no session, so the server cannot send requests to the client.")
        result: dict[str, Any] = await self.client_requests(self, method, params)
        return result

    async def start_stream(self) -> None:
        """Switch to SSE now (for responses that are long-lived by nature)."""
        if self.writer is None:
            self.writer = SseWriter(self._send, self._headers, self._keepalive_s)
        await self.writer.start()

    async def finish(self, body: bytes | None, status: int = 200) -> None:
        """Send the final message (``None``: end the stream without one)."""
        await self.drain()
        self.finished = True
        if self.writer is None:
            if body is None:
                await self._send({"type": "http.response.start", "status": 202, "headers": [
                    (b"content-length", b"0"), *self._headers]})
                await self._send({"type": "http.response.body", "body": b""})
            else:
                await json_response(self._send, status, body, self._headers)
            return
        if body is None:
            await self.writer.close()
            return
        eid = await self.sink(body) if self.sink is not None else None
        await self.writer.close(event(body, eid))

    def abandon(self) -> None:
        """The client is gone: drop anything still queued and stop writing."""
        self.finished = True
        self._queue.clear()
        if self.writer is not None:
            self.writer.abandon()
