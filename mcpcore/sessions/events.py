"""The resumable event buffer of 2025-era sessions.

Every SSE event a stateful session is sent is appended here first and gets the id
``<streamId>_<seq>``. A client that lost its connection sends ``GET`` with ``Last-Event-ID``;
the server replays that stream only, after that id, then follows it live until its end (the
stream's response was sent). With Redis the buffer is shared, so any instance can resume a
stream another instance wrote, including one that has since died.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["EventBuffer", "MemoryEventBuffer", "split_event_id"]

END = b""  # data of the end marker; the priming event is stored with data b" "
PRIME = b" "


def split_event_id(event_id: str) -> tuple[str, str] | None:
    """``(stream id, seq)`` of an event id, or ``None`` when it is not one of ours."""
    stream, sep, seq = event_id.rpartition("_")
    if not sep or not stream or not seq or len(event_id) > 200:
        return None
    return stream, seq


class EventBuffer(Protocol):
    """Appends and replays the events of each session's streams."""

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Store one event; returns its id ``<streamId>_<seq>``. ``data`` is a JSON-RPC message,
        or :data:`PRIME` for a priming event."""
        ...

    async def end(self, session_id: str, stream_id: str) -> None:
        """Mark a stream complete (its response was sent): followers stop there."""
        ...

    def follow(self, session_id: str, stream_id: str,
               after: str | None) -> AsyncGenerator[tuple[str, bytes], None]:
        """Events of one stream after ``after`` (``None``: from the start), then live ones, until
        the stream ends. Raises :class:`LookupError` at once when ``after`` is unknown or evicted."""
        ...

    async def release(self, session_id: str) -> None:
        """Drop everything of a session (it ended)."""
        ...


@dataclass(slots=True)
class _Entry:
    seq: int
    stream: str
    data: bytes
    at: float
    end: bool = False


@dataclass(slots=True)
class _SessionEvents:
    entries: deque[_Entry] = field(default_factory=deque)
    seqs: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class MemoryEventBuffer:
    """Per-session bounded buffers in this process (by count and by age)."""

    def __init__(self, max_events: int = 512, ttl_ms: int = 300_000) -> None:
        self.max_events = max_events
        self.ttl = ttl_ms / 1000
        self._sessions: dict[str, _SessionEvents] = {}

    def _get(self, session_id: str) -> _SessionEvents:
        s = self._sessions.get(session_id)
        if s is None:
            s = self._sessions[session_id] = _SessionEvents()
        return s

    def _add(self, session_id: str, stream_id: str, data: bytes, end: bool) -> str:
        s = self._get(session_id)
        now = time.monotonic()
        seq = next(s.seqs)
        s.entries.append(_Entry(seq, stream_id, data, now, end))
        while s.entries and (len(s.entries) > self.max_events or s.entries[0].at < now - self.ttl):
            s.entries.popleft()
        s.changed.set()
        s.changed = asyncio.Event()
        return f"{stream_id}_{seq}"

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        return self._add(session_id, stream_id, data, False)

    async def end(self, session_id: str, stream_id: str) -> None:
        self._add(session_id, stream_id, END, True)

    async def follow(self, session_id: str, stream_id: str,
                     after: str | None) -> AsyncGenerator[tuple[str, bytes], None]:
        s = self._sessions.get(session_id)
        last = 0
        if after is not None:
            if s is None or not after.isdigit() or not any(e.seq == int(after) and e.stream == stream_id
                                                          for e in s.entries):
                raise LookupError(after)
            last = int(after)
        while True:
            s = self._sessions.get(session_id)
            if s is None:
                return
            waiter = s.changed
            for e in list(s.entries):
                if e.seq <= last or e.stream != stream_id:
                    continue
                last = e.seq
                if e.end:
                    return
                yield f"{stream_id}_{e.seq}", e.data
            await waiter.wait()

    async def release(self, session_id: str) -> None:
        s = self._sessions.pop(session_id, None)
        if s is not None:
            s.changed.set()
