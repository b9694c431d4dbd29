"""One POSTed request's outbound channel: plain JSON unless the handler emits first.

The response start is delayed. If the handler finishes without posting anything, the result is
sent as ``application/json``. The first posted message switches the response to
``text/event-stream``; every later message, and finally the result, is an SSE event. This keeps
the common path as cheap as a plain JSON API.

On a resumable stream every event is appended to the session's event buffer before it is
written, by a task of its own, so a slow client never delays what is stored for a resume. The
memory buffer stores synchronously, so the pump frames each event with its id in one step; what
the pump queued while the writer was busy goes out as one write.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from random import getrandbits as _randbits
from typing import TYPE_CHECKING, Any, Protocol

from .. import _json
from ..errors import McpError
from ..sessions.events import END, PRIME, EventBuffer, MemoryEventBuffer, SessionEvents
from .sse import SseWriter, event

if TYPE_CHECKING:
    from ..sessions.base import SessionRecord

__all__ = ["HttpExchange", "SessionLink", "StreamSink", "json_response", "new_stream_id", "priming_event"]

Send = Callable[[dict[str, Any]], Awaitable[None]]



RETRY_AFTER = (b"retry-after", b"1")
"""Sent with every 503 that does not set its own: the shared store is unreachable or failing
over (or the server is full), and a retry a second later usually succeeds."""


async def json_response(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    h = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if headers:
        h += headers
    if status == 503 and not any(k.lower() == b"retry-after" for k, _ in h):
        h.append(RETRY_AFTER)
    await send({"type": "http.response.start", "status": status, "headers": h})
    await send({"type": "http.response.body", "body": body})


def priming_event(event_id: str, retry_ms: int | None) -> bytes:
    """An event with an id and empty data (2025-11-25): the client's resume point from the start."""
    if retry_ms is None:
        return b"id: %b\ndata: \n\n" % event_id.encode()
    return b"id: %b\nretry: %d\ndata: \n\n" % (event_id.encode(), retry_ms)


def new_stream_id() -> str:
    """A stream id: 48 random bits, unique within a session. It selects a stream of a session
    whose id the client must present anyway, so it needs no cryptographic randomness (which
    costs a system call)."""
    return f"{_randbits(48):012x}"


class StreamSink:
    """Where one resumable stream's events are stored (a session's buffer, one stream id).

    The stream id is drawn when first needed (most requests are answered with plain JSON and
    never need one). ``sync`` is true for the memory buffer: then the ``*_nowait`` methods store
    an event and frame it with its id without awaiting."""

    __slots__ = ("_events", "_id", "_stream_id", "buffer", "prime", "retry_ms", "session_id", "sync")

    def __init__(self, buffer: EventBuffer, session_id: str, stream_id: str | None = None, *, prime: bool,
                 retry_ms: int | None) -> None:
        self.buffer = buffer
        self.session_id = session_id
        self._stream_id = stream_id
        self.prime = prime
        self.retry_ms = retry_ms
        self.sync = type(buffer) is MemoryEventBuffer
        self._events: SessionEvents | None = None
        self._id = b""  # b"id: <stream id>_"

    @property
    def stream_id(self) -> str:
        sid = self._stream_id
        if sid is None:
            sid = self._stream_id = new_stream_id()
        return sid

    async def append(self, data: bytes) -> str:
        """Store one event; returns its id."""
        if self.sync:
            return f"{self.stream_id}_{self._open().add(self.stream_id, data)}"
        return await self.buffer.append(self.session_id, self.stream_id, data)

    # A shared buffer that cannot be written (Redis unreachable or failing over) does not break a
    # response already streaming: its events still go out, without an id (not resumable).

    async def end(self) -> None:
        if self.sync:
            self.end_nowait()
        else:
            try:
                await self.buffer.end(self.session_id, self.stream_id)
            except McpError:
                pass

    async def event(self, data: bytes) -> bytes:
        """Store ``data`` and return its SSE event, with the id (none when it could not be stored)."""
        if self.sync:
            return self.event_nowait(data)
        try:
            return event(data, await self.buffer.append(self.session_id, self.stream_id, data))
        except McpError:
            return event(data)

    async def priming(self) -> bytes:
        """Store a priming event and return it (``b""`` when it could not be stored)."""
        if self.sync:
            return self.priming_nowait()
        try:
            return priming_event(await self.buffer.append(self.session_id, self.stream_id, PRIME), self.retry_ms)
        except McpError:
            return b""

    # -- the memory buffer, without awaiting ------------------------------------------------------

    def _open(self) -> SessionEvents:
        events = self._events
        if events is None:
            assert isinstance(self.buffer, MemoryEventBuffer)
            events = self._events = self.buffer.open(self.session_id)
            self._id = b"id: " + self.stream_id.encode() + b"_"
        return events

    def event_nowait(self, data: bytes) -> bytes:
        events = self._events or self._open()
        seq = events.add(self._stream_id or self.stream_id, data)
        return b"event: message\n%b%d\ndata: %b\n\n" % (self._id, seq, data)

    def priming_nowait(self) -> bytes:
        events = self._events or self._open()
        seq = events.add(self._stream_id or self.stream_id, PRIME)
        if self.retry_ms is None:
            return b"%b%d\ndata: \n\n" % (self._id, seq)
        return b"%b%d\nretry: %d\ndata: \n\n" % (self._id, seq, self.retry_ms)

    def end_nowait(self) -> None:
        (self._events or self._open()).add(self._stream_id or self.stream_id, END, True)


class SessionLink(Protocol):
    """What an exchange on a 2025 session reaches only when it needs it: the buffer its stream
    is stored in, and the client it may send requests to."""

    def sink_for(self, record: SessionRecord) -> StreamSink | None: ...

    async def ask_client(self, session_id: str, exchange: HttpExchange, method: str,
                         params: dict[str, Any] | None) -> dict[str, Any]: ...


class HttpExchange:
    """The :class:`~mcpcore.context.Outbound` of one HTTP request.

    Built for every request, so it holds only references: the queues and, on a session, the
    stream's sink are made when the handler first posts (a JSON answer never needs them)."""

    __slots__ = ("_keepalive_s", "_link", "_queue", "_record", "_send", "_writeq", "_writing", "finished",
                 "max_queued", "pumping", "sink", "slow", "writer")

    def __init__(self, send: Send, keepalive_s: float, record: SessionRecord | None = None,
                 link: SessionLink | None = None, max_queued: int = 1000) -> None:
        self._send = send
        self._keepalive_s = keepalive_s
        self._record = record
        self._link = link
        self._queue: deque[bytes] | None = None
        self._writeq: deque[bytes] | None = None
        self.pumping: asyncio.Task[None] | None = None
        """The task turning posted messages into events (``None``: nothing posted is pending)."""
        self._writing: asyncio.Task[None] | None = None
        self.writer: SseWriter | None = None
        self.finished = False
        self.sink: StreamSink | None = None
        self.max_queued = max_queued
        self.slow = False  # the client stopped reading: its stream is dropped (the sink keeps every event)

    @property
    def streaming(self) -> bool:
        return self.writer is not None

    def post(self, message: dict[str, Any]) -> None:
        if self.finished:
            return
        q = self._queue
        if q is None:
            q = self._queue = deque()
        q.append(_json.dumps(message))
        if self.pumping is None:
            self.pumping = asyncio.get_running_loop().create_task(self._pump())

    async def _open(self) -> None:
        """Start SSE: the writer, and on a resumable stream the priming event."""
        self.writer = SseWriter(self._send, [], self._keepalive_s)
        record = self._record
        sink = self.sink = self._link.sink_for(record) if record is not None and self._link is not None else None
        if sink is not None and sink.prime:
            chunk = sink.priming_nowait() if sink.sync else await sink.priming()
            if chunk:
                self._enqueue(chunk)

    async def _pump(self) -> None:
        q = self._queue
        assert q is not None
        try:
            while q:
                data = q.popleft()
                if self.writer is None:
                    await self._open()
                sink = self.sink
                if sink is None:
                    self._enqueue(event(data))
                else:
                    self._enqueue(sink.event_nowait(data) if sink.sync else await sink.event(data))
        finally:
            self.pumping = None

    def _enqueue(self, chunk: bytes) -> None:
        if self.slow:
            return
        q = self._writeq
        if q is None:
            q = self._writeq = deque()
        if len(q) >= self.max_queued:  # the client reads nothing while the handler goes on posting
            self.slow = True
            q.clear()
            return
        q.append(chunk)
        if self._writing is None:
            self._writing = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        try:
            q = self._writeq
            while q:  # never None here: _enqueue made it
                assert self.writer is not None
                if len(q) == 1:
                    chunk = q.popleft()
                else:  # what queued up while the last write was under way: one send
                    chunk = b"".join(q)
                    q.clear()
                await self.writer.write(chunk)
        finally:
            self._writing = None

    async def drain(self) -> None:
        """Wait until everything posted so far is stored and written."""
        while self.pumping is not None or self._writing is not None:
            task = self.pumping or self._writing
            assert task is not None
            await asyncio.shield(task)

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        if self._record is None or self._link is None:
            from ..errors import JsonRpcErrorCode, McpError

            raise McpError(JsonRpcErrorCode.InvalidRequest,
                           "This request has no session, so the server cannot send requests to the client.")
        return await self._link.ask_client(self._record.id, self, method, params)

    def plain_answer(self, body: bytes) -> dict[str, Any] | None:
        """The ``http.response.start`` of ``body`` as a 200 JSON answer, when nothing was
        streamed or posted (the exchange is then finished: send it, then ``body``); ``None``
        otherwise (:meth:`finish` answers). A transport's common answer, without the coroutine
        :meth:`finish` costs."""
        if self.writer is not None or self.pumping is not None:
            return None
        self.finished = True
        return {"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]}

    async def finish(self, body: bytes | None, status: int = 200,
                     extra_headers: list[tuple[bytes, bytes]] | None = None) -> None:
        """Send the final message (``None``: end the stream without one)."""
        while self.pumping is not None:
            await asyncio.shield(self.pumping)
        self.finished = True
        if self.writer is None:
            if body is None:
                await self._send({"type": "http.response.start", "status": 202, "headers": [
                    (b"content-length", b"0")]})
                await self._send({"type": "http.response.body", "body": b""})
            else:  # json_response, inlined: this is every JSON answer's path
                h = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
                if extra_headers:
                    h += extra_headers
                if status == 503 and not any(k.lower() == b"retry-after" for k, _ in h):
                    h.append(RETRY_AFTER)
                await self._send({"type": "http.response.start", "status": status, "headers": h})
                await self._send({"type": "http.response.body", "body": body})
            return
        sink = self.sink
        if sink is None:
            final = event(body) if body is not None else b""
        elif sink.sync:
            final = sink.event_nowait(body) if body is not None else b""
            sink.end_nowait()
        else:  # a shared buffer: the result goes out while the end marker is being stored
            final = b""
            if body is not None:
                self._enqueue(await sink.event(body))
            await sink.end()
        if self.slow:  # end the response unfinished: the server closes the connection; the client may resume
            self.abandon()
            return
        await self.drain()
        await self.writer.close(final)  # the last event and the end of the response: one send

    def abandon(self) -> None:
        """The client is gone: drop anything still queued and stop writing."""
        self.finished = True
        if self._queue is not None:
            self._queue.clear()
        if self._writeq is not None:
            self._writeq.clear()
        if self.writer is not None:
            self.writer.abandon()
