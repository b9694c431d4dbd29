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
    parts = [b"event: ", name, b"\n"]
    if event_id is not None:
        parts += [b"id: ", event_id.encode(), b"\n"]
    if retry_ms is not None:
        parts += [b"retry: ", str(retry_ms).encode(), b"\n"]
    parts += [b"data: ", data, b"\n\n"]
    return b"".join(parts)


def comment(text: bytes = b"keep-alive") -> bytes:
    return b": " + text + b"\n\n"


class SseWriter:
    """Writes an SSE response: headers once, then events, comments and the end, serialised by a
    lock, with a keep-alive comment after every ``keepalive_s`` of silence."""

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], keepalive_s: float) -> None:
        self._send = send
        self._headers = headers
        self._keepalive_s = keepalive_s
        self._lock = asyncio.Lock()
        self._ka: asyncio.Task[None] | None = None
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
        await self._send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS + self._headers})
        self._last = asyncio.get_running_loop().time()
        if self._keepalive_s > 0:
            self._ka = asyncio.get_running_loop().create_task(self._keepalive())

    async def write(self, chunk: bytes) -> None:
        async with self._lock:
            if self.closed:
                return
            await self._start()
            await self._send({"type": "http.response.body", "body": chunk, "more_body": True})
            self._last = asyncio.get_running_loop().time()

    async def close(self, final: bytes = b"") -> None:
        """Write ``final`` (if any) and end the response."""
        async with self._lock:
            if self.closed:
                return
            await self._start()
            self.closed = True
            if self._ka is not None:
                self._ka.cancel()
            with contextlib.suppress(Exception):
                await self._send({"type": "http.response.body", "body": final, "more_body": False})

    def abandon(self) -> None:
        """Stop writing (the client went away)."""
        self.closed = True
        if self._ka is not None:
            self._ka.cancel()

    async def _keepalive(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not self.closed:
                wait = self._last + self._keepalive_s - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                async with self._lock:
                    if self.closed:
                        return
                    await self._send({"type": "http.response.body", "body": comment(), "more_body": True})
                    self._last = loop.time()
        except asyncio.CancelledError:
            pass
        except Exception:
            log.debug("keep-alive stopped", exc_info=True)
