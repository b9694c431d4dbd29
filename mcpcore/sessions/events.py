"""The resumable event buffer of 2025-era sessions.

Every SSE event a stateful session is sent is appended here first and gets the id
``<streamId>_<seq>``. A client that lost its connection sends ``GET`` with ``Last-Event-ID``;
the server replays that stream only, after that id, then follows it live until its end (the
stream's response was sent). With Redis the buffer is shared, so any instance can resume a
stream another instance wrote, including one that has since died.

The memory buffer is on the path of every SSE response, so an append is a tuple pushed onto a
bounded deque: no task, lock or event per append, nothing woken unless a follower waits, age
trimming only when the oldest entry has expired.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncGenerator
from typing import Protocol

__all__ = ["EventBuffer", "MemoryEventBuffer", "SessionEvents", "split_event_id"]

END = b""  # data of the end marker; the priming event is stored with data b" "
PRIME = b" "

_monotonic = time.monotonic


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


# An entry: (seq, stream id, data, monotonic time, end marker). Seqs are consecutive within a
# session and entries leave only from the left, so entry ``seq`` sits at ``seq - entries[0][0]``.
_Entry = tuple[int, str, bytes, float, bool]


class SessionEvents:
    """One session's events, oldest first, at most ``max_events`` (the deque drops the oldest)."""

    __slots__ = ("changed", "entries", "seq", "ttl")

    def __init__(self, max_events: int, ttl: float) -> None:
        self.entries: deque[_Entry] = deque(maxlen=max_events)
        self.seq = 0
        self.ttl = ttl
        self.changed: asyncio.Event | None = None  # exists only while a follower waits

    def add(self, stream_id: str, data: bytes, end: bool = False) -> int:
        """Store one event synchronously; returns its seq."""
        self.seq = seq = self.seq + 1
        now = _monotonic()
        entries = self.entries
        entries.append((seq, stream_id, data, now, end))
        if entries[0][3] < now - self.ttl:
            self.expire(now)
        changed = self.changed
        if changed is not None:
            self.changed = None
            changed.set()
        return seq

    def expire(self, now: float) -> None:
        """Drop the entries older than the TTL (they are at the left)."""
        entries, limit = self.entries, now - self.ttl
        while entries and entries[0][3] < limit:
            entries.popleft()

    def index(self, seq: int) -> int:
        """Position of entry ``seq``: negative when evicted, ``len(entries)`` for the next one."""
        return seq - self.entries[0][0] if self.entries else 0

    def holds(self, seq: int, stream_id: str) -> bool:
        """Whether entry ``seq`` of ``stream_id`` is still here."""
        self.expire(_monotonic())
        i = self.index(seq)
        return 0 <= i < len(self.entries) and self.entries[i][1] == stream_id


class MemoryEventBuffer:
    """Per-session bounded buffers in this process (by count and by age)."""

    def __init__(self, max_events: int = 512, ttl_ms: int = 300_000) -> None:
        self.max_events = max_events
        self.ttl = ttl_ms / 1000
        self._sessions: dict[str, SessionEvents] = {}

    def open(self, session_id: str) -> SessionEvents:
        """The session's buffer, created on first use. A writer may keep it for the life of a
        stream: once the session is released, what it adds goes away with the object."""
        s = self._sessions.get(session_id)
        if s is None:
            s = self._sessions[session_id] = SessionEvents(self.max_events, self.ttl)
        return s

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        return f"{stream_id}_{self.open(session_id).add(stream_id, data)}"

    async def end(self, session_id: str, stream_id: str) -> None:
        self.open(session_id).add(stream_id, END, True)

    async def follow(self, session_id: str, stream_id: str,
                     after: str | None) -> AsyncGenerator[tuple[str, bytes], None]:
        s = self._sessions.get(session_id)
        last = 0
        if after is not None:
            if s is None or not after.isdigit() or not s.holds(int(after), stream_id):
                raise LookupError(after)
            last = int(after)
        while True:
            if s is None or self._sessions.get(session_id) is not s:
                return  # never written, or released
            s.expire(_monotonic())
            entries = s.entries
            i, n = max(s.index(last + 1), 0), len(entries)
            while i < n and entries[i][1] != stream_id:
                i += 1
            if i < n:
                seq, _, data, _, end = entries[i]
                last = seq
                if end:
                    return
                yield f"{stream_id}_{seq}", data
                continue
            if n:
                last = entries[-1][0]  # nothing of this stream up to here: do not scan it again
            waiter = s.changed
            if waiter is None:
                waiter = s.changed = asyncio.Event()
            await waiter.wait()

    async def release(self, session_id: str) -> None:
        self.release_nowait(session_id)

    def release_nowait(self, session_id: str) -> None:
        """:meth:`release` without awaiting (nothing here waits)."""
        s = self._sessions.pop(session_id, None)
        if s is not None and s.changed is not None:
            s.changed.set()
