"""One POSTed request's outbound channel: plain JSON unless the handler emits first.

The response start is delayed. If the handler finishes without posting anything, the result is
sent as ``application/json``. The first posted message switches the response to
``text/event-stream``; every later message, and finally the result, is an SSE event. This keeps
the common path as cheap as a plain JSON API.

On a resumable stream every event is appended to the session's event buffer before it is
written, by a task of its own, so a slow client never delays what is stored for a resume.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from .. import _json
from ..sessions.events import PRIME, EventBuffer
from .sse import SseWriter, event

__all__ = ["HttpExchange", "StreamSink", "json_response", "priming_event"]

Send = Callable[[dict[str, Any]], Awaitable[None]]



async def json_response(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    h = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if headers:
        h += headers
    await send({"type": "http.response.start", "status": status, "headers": h})
    await send({"type": "http.response.body", "body": body})


def priming_event(event_id: str, retry_ms: int | None) -> bytes:
    """An event with an id and empty data (2025-11-25): the client's resume point from the start."""
    retry = b"retry: " + str(retry_ms).encode() + b"\n" if retry_ms is not None else b""
    return b"id: " + event_id.encode() + b"\n" + retry + b"data: \n\n"


class StreamSink:
    """Where one resumable stream's events are stored (a session's buffer, one stream id)."""

    __slots__ = ("buffer", "prime", "retry_ms", "session_id", "stream_id")

    def __init__(self, buffer: EventBuffer, session_id: str, stream_id: str, *, prime: bool,
                 retry_ms: int | None) -> None:
        self.buffer = buffer
        self.session_id = session_id
        self.stream_id = stream_id
        self.prime = prime
        self.retry_ms = retry_ms

    async def append(self, data: bytes) -> str:
        return await self.buffer.append(self.session_id, self.stream_id, data)

    async def end(self) -> None:
        await self.buffer.end(self.session_id, self.stream_id)


class HttpExchange:
    """The :class:`~mcpcore.context.Outbound` of one HTTP request."""

    __slots__ = ("_headers", "_keepalive_s", "_pumping", "_queue", "_send", "_writeq", "_writing",
                 "client_requests", "finished", "sink", "writer")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], keepalive_s: float,
                 sink: StreamSink | None = None, client_requests: Any = None) -> None:
        self._send = send
        self._headers = headers
        self._keepalive_s = keepalive_s
        self._queue: deque[bytes] = deque()
        self._writeq: deque[bytes] = deque()
        self._pumping: asyncio.Task[None] | None = None
        self._writing: asyncio.Task[None] | None = None
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
        if self._pumping is None:
            self._pumping = asyncio.get_running_loop().create_task(self._pump())

    async def _open(self) -> None:
        """Start SSE: the writer, and on a resumable stream the priming event."""
        self.writer = SseWriter(self._send, self._headers, self._keepalive_s)
        if self.sink is not None and self.sink.prime:
            eid = await self.sink.append(PRIME)
            self._enqueue(priming_event(eid, self.sink.retry_ms))

    async def _pump(self) -> None:
        try:
            while self._queue:
                data = self._queue.popleft()
                if self.writer is None:
                    await self._open()
                eid = await self.sink.append(data) if self.sink is not None else None
                self._enqueue(event(data, eid))
        finally:
            self._pumping = None

    def _enqueue(self, chunk: bytes) -> None:
        self._writeq.append(chunk)
        if self._writing is None:
            self._writing = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        try:
            while self._writeq:
                assert self.writer is not None
                await self.writer.write(self._writeq.popleft())
        finally:
            self._writing = None

    async def drain(self) -> None:
        """Wait until everything posted so far is stored and written."""
        while self._pumping is not None or self._writing is not None:
            task = self._pumping or self._writing
            assert task is not None
            await asyncio.shield(task)

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        if self.client_requests is None:
            from ..errors import JsonRpcErrorCode, McpError

            raise McpError(JsonRpcErrorCode.InvalidRequest,
                           "This request has no session, so the server cannot send requests to the client.")
        result: dict[str, Any] = await self.client_requests(self, method, params)
        return result

    async def finish(self, body: bytes | None, status: int = 200,
                     extra_headers: list[tuple[bytes, bytes]] | None = None) -> None:
        """Send the final message (``None``: end the stream without one)."""
        while self._pumping is not None:
            await asyncio.shield(self._pumping)
        self.finished = True
        if self.writer is None:
            if body is None:
                await self._send({"type": "http.response.start", "status": 202, "headers": [
                    (b"content-length", b"0"), *self._headers]})
                await self._send({"type": "http.response.body", "body": b""})
            else:
                await json_response(self._send, status, body, self._headers + (extra_headers or []))
            return
        if body is not None:
            eid = await self.sink.append(body) if self.sink is not None else None
            self._enqueue(event(body, eid))
        if self.sink is not None:
            await self.sink.end()
        await self.drain()
        await self.writer.close()

    def abandon(self) -> None:
        """The client is gone: drop anything still queued and stop writing."""
        self.finished = True
        self._queue.clear()
        self._writeq.clear()
        if self.writer is not None:
            self.writer.abandon()
