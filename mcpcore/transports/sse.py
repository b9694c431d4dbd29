"""Server-sent events: framing and one writer per open stream (ordered writes, keep-alives)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["SSE_HEADERS", "SseWriter", "comment", "event"]

log = logging.getLogger("mcpcore.transport")

Send = Callable[[dict[str, Any]], Awaitable[None]]

SSE_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


def event(data: bytes, event_id: str | None = None, name: bytes = b"message", retry_ms: int | None = None) -> bytes:
    """One SSE event; ``data`` is a single JSON line (JSON never contains a raw newline)."""
    head = b"event: message\n" if name == b"message" else b"event: " + name + b"\n"
    if event_id is not None:
        head += b"id: " + event_id.encode() + b"\n"
    if retry_ms is not None:
        head += b"retry: %d\n" % retry_ms
    return b"".join((head, b"data: ", data, b"\n\n"))


def comment(text: bytes = b"keep-alive") -> bytes:
    return b": " + text + b"\n\n"


class SseWriter:
    """Writes an SSE response: headers once, then events, comments and the end, serialised by a
    lock, with a keep-alive comment after every ``keepalive_s`` of silence (a timer, not a task:
    a stream that ends before its first keep-alive costs one scheduled callback)."""

    __slots__ = ("_headers", "_ka", "_keepalive_s", "_last", "_lock", "_loop", "_ping", "_send",
                 "closed", "started")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], keepalive_s: float) -> None:
        self._send = send
        self._headers = headers
        self._keepalive_s = keepalive_s
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ka: asyncio.TimerHandle | None = None
        self._ping: asyncio.Task[None] | None = None
        self._last = 0.0
        self.started = False
        self.closed = False

    async def start(self) -> None:
        async with self._lock:
            await self._start()

    async def _start(self) -> None:
        if self.started:
            return
        self.started = True
        self._loop = loop = asyncio.get_running_loop()
        await self._send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS + self._headers})
        self._last = loop.time()
        if self._keepalive_s > 0:
            self._ka = loop.call_later(self._keepalive_s, self._tick)

    async def write(self, chunk: bytes) -> None:
        async with self._lock:
            if self.closed:
                return
            if not self.started:
                await self._start()
            await self._send({"type": "http.response.body", "body": chunk, "more_body": True})
            assert self._loop is not None
            self._last = self._loop.time()

    async def close(self, final: bytes = b"") -> None:
        """Write ``final`` (if any) and end the response."""
        async with self._lock:
            if self.closed:
                return
            await self._start()
            self._stop()
            with contextlib.suppress(Exception):
                await self._send({"type": "http.response.body", "body": final, "more_body": False})

    def abandon(self) -> None:
        """Stop writing (the client went away)."""
        self._stop()
        if self._ping is not None:
            self._ping.cancel()

    def _stop(self) -> None:
        self.closed = True
        if self._ka is not None:
            self._ka.cancel()
            self._ka = None

    def _tick(self) -> None:
        """The keep-alive timer: write a comment when the stream was silent long enough."""
        self._ka = None
        loop = self._loop
        if self.closed or loop is None:
            return
        wait = self._last + self._keepalive_s - loop.time()
        if wait > 0:
            self._ka = loop.call_later(wait, self._tick)
        elif self._ping is None:
            self._ping = loop.create_task(self._keepalive())

    async def _keepalive(self) -> None:
        try:
            async with self._lock:
                if self.closed:
                    return
                await self._send({"type": "http.response.body", "body": comment(), "more_body": True})
                assert self._loop is not None
                self._last = self._loop.time()
        except asyncio.CancelledError:
            return
        except Exception:
            log.debug("keep-alive stopped", exc_info=True)
            return
        finally:
            self._ping = None
        if not self.closed:
            self._ka = self._loop.call_later(self._keepalive_s, self._tick)
