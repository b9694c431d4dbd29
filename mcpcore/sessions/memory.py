"""Sessions in this process's memory: sliding idle expiry, a capacity cap."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

from ..errors import JsonRpcErrorCode, McpError
from .base import SessionRecord

__all__ = ["MemorySessionStore", "SessionCapacityError"]


class SessionCapacityError(McpError):
    """No room for another session (answered 503)."""

    def __init__(self, cap: int) -> None:
        super().__init__(JsonRpcErrorCode.ServiceUnavailable,
                         f"Too many open sessions ({cap}); try again later.", {"reason": "session_capacity"})


class MemorySessionStore:
    """Sessions in an LRU-ordered dict.

    When the cap is reached, expired sessions are dropped first; then the least recently used
    session that is not busy (``is_busy(id)`` is false: no open stream, nothing in flight) is
    evicted, so abandoned sessions never lock new clients out, but never another identity's
    recent one: a session of another identity makes room only once it has been idle for
    ``evict_after_ms`` (else the newcomer is refused, 503). Anonymous sessions (no auth) are all
    one principal. One authenticated identity holds at most ``max_per_identity`` sessions (its
    least recently used idle one makes room).
    """

    def __init__(self, *, idle_ms: int = 1_800_000, max_sessions: int = 10_000, max_per_identity: int = 100,
                 evict_after_ms: int = 60_000, is_busy: Callable[[str], bool] | None = None) -> None:
        self._items: OrderedDict[str, SessionRecord] = OrderedDict()
        self.idle = idle_ms / 1000
        self.evict_after = evict_after_ms / 1000
        self.max_sessions = max_sessions
        self.max_per_identity = max_per_identity
        # an identity's sessions (insertion order); its least recently used one is found from
        # ``last_seen`` when the identity is at its cap, so a request's ``get`` keeps no second order
        self._by_identity: dict[tuple[str, str, str], dict[str, None]] = {}
        self.is_busy = is_busy or (lambda _id: False)
        self.on_evict: Callable[[str], None] | None = None

    def _idle_victim(self, candidates: Iterable[str], older_than: float | None = None) -> str | None:
        """The first session of ``candidates`` (oldest first) that is not busy and, when
        ``older_than`` is given, was last seen before it."""
        for sid in candidates:
            if older_than is not None and self._items[sid].last_seen > older_than:
                return None
            if not self.is_busy(sid):
                return sid
        return None

    async def create(self, record: SessionRecord) -> None:
        if record.identity is not None:
            mine = self._by_identity.get(record.identity, ())
            if len(mine) >= self.max_per_identity:
                victim = self._idle_victim(self._by_recency(mine))
                if victim is None:
                    raise SessionCapacityError(self.max_per_identity)
                self._drop(victim)
        if len(self._items) >= self.max_sessions:
            await self.sweep()
        if len(self._items) >= self.max_sessions:
            own: list[str] = self._by_recency(self._by_identity.get(record.identity, ())) \
                if record.identity is not None else [sid for sid, r in self._items.items() if r.identity is None]
            victim = self._idle_victim(list(self._items), time.monotonic() - self.evict_after) or \
                self._idle_victim(own)
            if victim is not None:
                self._drop(victim)
        if len(self._items) >= self.max_sessions:
            raise SessionCapacityError(self.max_sessions)
        record.last_seen = time.monotonic()
        self._items[record.id] = record
        if record.identity is not None:
            self._by_identity.setdefault(record.identity, {})[record.id] = None

    def _by_recency(self, ids: Iterable[str]) -> list[str]:
        """``ids`` least recently used first."""
        items = self._items
        return sorted(ids, key=lambda sid: items[sid].last_seen)

    async def get(self, session_id: str) -> SessionRecord | None:
        rec = self._items.get(session_id)
        if rec is None:
            return None
        now = time.monotonic()
        if now - rec.last_seen > self.idle and not self.is_busy(session_id):
            self._drop(session_id)
            return None
        rec.last_seen = now
        self._items.move_to_end(session_id)
        return rec

    async def save(self, record: SessionRecord) -> None:
        old = self._items.get(record.id)
        if old is not None:
            self._items[record.id] = record
            if record.identity is not None:  # bound to an identity on its first authenticated use
                own = self._by_identity.setdefault(record.identity, {})
                if record.id not in own:
                    own[record.id] = None

    async def delete(self, session_id: str) -> bool:
        return self._drop(session_id)

    def _drop(self, session_id: str) -> bool:
        rec = self._items.pop(session_id, None)
        if rec is None:
            return False
        self._unindex(session_id, rec.identity)
        if self.on_evict is not None:
            self.on_evict(session_id)
        return True

    def _unindex(self, session_id: str, identity: tuple[str, str, str] | None) -> None:
        if identity is None:
            return
        own = self._by_identity.get(identity)
        if own is not None:
            own.pop(session_id, None)
            if not own:
                del self._by_identity[identity]

    async def count(self) -> int:
        return len(self._items)

    def __len__(self) -> int:
        return len(self._items)

    async def sweep(self) -> int:
        now = time.monotonic()
        dead = [sid for sid, r in self._items.items() if now - r.last_seen > self.idle and not self.is_busy(sid)]
        for sid in dead:
            self._drop(sid)
        return len(dead)

    async def close(self) -> None:
        self._items.clear()
        self._by_identity.clear()
