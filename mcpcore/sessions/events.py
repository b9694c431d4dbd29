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
from collections.abc import AsyncGenerator, Callable
from typing import Protocol

__all__ = ["Budget", "EventBuffer", "MemoryEventBuffer", "SessionEvents", "split_event_id"]

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


class Budget:
    """The bytes every session's buffer holds together, against ``MCP_HTTP_RESUMABILITY_MAX_TOTAL_BYTES``."""

    __slots__ = ("limit", "on_over", "total")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self.on_over: Callable[[SessionEvents], None] = lambda _s: None


class SessionEvents:
    """One session's events, oldest first: at most ``max_events`` and ``max_bytes`` of data
    (the oldest leave first), within the buffer's total budget."""

    __slots__ = ("budget", "changed", "entries", "max_bytes", "seq", "size", "ttl")

    def __init__(self, max_events: int, ttl: float, max_bytes: int = 1 << 62, budget: Budget | None = None) -> None:
        self.entries: deque[_Entry] = deque(maxlen=max_events)
        self.seq = 0
        self.ttl = ttl
        self.size = 0
        self.max_bytes = max_bytes
        self.budget = budget if budget is not None else Budget(1 << 62)
        self.changed: asyncio.Event | None = None  # exists only while a follower waits

    def add(self, stream_id: str, data: bytes, end: bool = False) -> int:
        """Store one event synchronously; returns its seq."""
        self.seq = seq = self.seq + 1
        now = _monotonic()
        entries = self.entries
        n = len(data)
        if len(entries) == entries.maxlen:
            n -= len(entries[0][2])  # the deque drops it on append
        entries.append((seq, stream_id, data, now, end))
        self.size += n
        budget = self.budget
        budget.total += n
        if entries[0][3] < now - self.ttl:
            self.expire(now)
        if self.size > self.max_bytes:
            self.shed(self.max_bytes)
        if budget.total > budget.limit:
            budget.on_over(self)
        changed = self.changed
        if changed is not None:
            self.changed = None
            changed.set()
        return seq

    def shed(self, size: int) -> None:
        """Drop the oldest entries until at most ``size`` bytes are held (the newest stays)."""
        entries = self.entries
        while self.size > size and len(entries) > 1:
            self._pop()

    def _pop(self) -> None:
        n = len(self.entries.popleft()[2])
        self.size -= n
        self.budget.total -= n

    def drop_all(self) -> None:
        """Forget every entry (the session was released)."""
        self.budget.total -= self.size
        self.size = 0
        self.entries.clear()

    def expire(self, now: float) -> None:
        """Drop the entries older than the TTL (they are at the left)."""
        entries, limit = self.entries, now - self.ttl
        while entries and entries[0][3] < limit:
            self._pop()

    def index(self, seq: int) -> int:
        """Position of entry ``seq``: negative when evicted, ``len(entries)`` for the next one."""
        return seq - self.entries[0][0] if self.entries else 0

    def holds(self, seq: int, stream_id: str) -> bool:
        """Whether entry ``seq`` of ``stream_id`` is still here."""
        self.expire(_monotonic())
        i = self.index(seq)
        return 0 <= i < len(self.entries) and self.entries[i][1] == stream_id


class MemoryEventBuffer:
    """Per-session bounded buffers in this process: by count, by age, by bytes per session and
    by bytes in all. Past the total, the sessions written to least recently lose their events
    first (down to 90% of the total, so the sweep is rare)."""

    def __init__(self, max_events: int = 512, ttl_ms: int = 300_000, *, max_bytes: int = 1_048_576,
                 max_total_bytes: int = 268_435_456) -> None:
        self.max_events = max_events
        self.ttl = ttl_ms / 1000
        self.max_bytes = max_bytes
        self.budget = Budget(max_total_bytes)
        self.budget.on_over = self._over_budget
        self._sessions: dict[str, SessionEvents] = {}

    @property
    def total_bytes(self) -> int:
        """Bytes of event data held for every session together."""
        return self.budget.total

    def bytes_of(self, session_id: str) -> int:
        """Bytes of event data held for one session (0 when none)."""
        s = self._sessions.get(session_id)
        return s.size if s is not None else 0

    def largest_session_bytes(self) -> int:
        """Bytes held by the session whose buffer holds the most."""
        return max((s.size for s in self._sessions.values()), default=0)

    def sweep(self) -> int:
        """Drop every session's events past their TTL, whether or not anyone replays them
        (called periodically); returns the bytes freed. A session's buffer object stays, empty,
        so its event ids keep counting up."""
        before = self.budget.total
        now = _monotonic()
        for s in self._sessions.values():
            s.expire(now)
        return before - self.budget.total

    def open(self, session_id: str) -> SessionEvents:
        """The session's buffer, created on first use. A writer may keep it for the life of a
        stream: once the session is released, what it adds goes away with the object."""
        s = self._sessions.get(session_id)
        if s is None:
            s = self._sessions[session_id] = SessionEvents(self.max_events, self.ttl, self.max_bytes, self.budget)
        return s

    def _over_budget(self, writing: SessionEvents) -> None:
        target = self.budget.limit * 9 // 10
        now = _monotonic()
        for s in self._sessions.values():
            s.expire(now)
        if self.budget.total <= target:
            return
        others = sorted((s for s in self._sessions.values() if s is not writing and s.entries),
                        key=lambda s: s.entries[-1][3])
        for s in others:
            s.shed(max(0, target - (self.budget.total - s.size)))
            if s.entries and self.budget.total > target:
                s._pop()
            if self.budget.total <= target:
                return
        writing.shed(max(0, target - (self.budget.total - writing.size)))

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        return f"{stream_id}_{self.open(session_id).add(stream_id, data)}"

    async def end(self, session_id: str, stream_id: str) -> None:
        self.open(session_id).add(stream_id, END, True)

    async def follow(self, session_id: str, stream_id: str,
                     after: str | None) -> AsyncGenerator[tuple[str, bytes], None]:
        s = self._sessions.get(session_id)
        last = 0
        if after is not None:
            if s is None or not (after.isascii() and after.isdigit()) or len(after) > 19 or \
                    not s.holds(int(after), stream_id):
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
        if s is not None:
            s.drop_all()
            s.budget = Budget(1 << 62)  # a writer still holding it no longer counts against the total
            if s.changed is not None:
                s.changed.set()
