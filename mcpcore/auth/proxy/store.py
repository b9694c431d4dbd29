"""Where the authorization server keeps its state: in this process, or in the app's Redis so any
instance serves any step of a flow.

Every record is a small JSON object under ``(kind, key)`` with a lifetime; nothing is kept without
one. Keys derived from secrets (codes, refresh tokens) are their SHA-256, so a dump of the store
holds no usable credential. Each operation touches one key, so Redis Cluster needs no hash tags.

The one-time records (codes, transactions, refresh tokens) are taken or swapped atomically
(``GETDEL``, ``SET ... XX KEEPTTL GET``): of two requests racing with one code, one wins.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from ... import _json

__all__ = ["MemoryProxyStore", "ProxyStore", "RedisProxyStore", "StoreFull"]

PREFIX = "mcpcore:as:"
# Per kind, the most records one process keeps (registrations have their own setting).
MEMORY_CAP = 100_000


class StoreFull(Exception):
    """No room for another record of this kind: the caller answers ``temporarily_unavailable``."""


class ProxyStore(Protocol):
    """The authorization server's records (see the module docstring)."""

    async def put(self, kind: str, key: str, value: dict[str, Any], ttl: float) -> None:
        """Store ``value`` for ``ttl`` seconds, replacing any record there.

        Raises:
            StoreFull: the bound of this kind is reached.
        """
        ...

    async def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """The live record, or ``None``."""
        ...

    async def take(self, kind: str, key: str) -> dict[str, Any] | None:
        """Remove and return the record (one caller of many gets it)."""
        ...

    async def swap(self, kind: str, key: str, value: dict[str, Any]) -> dict[str, Any] | None:
        """Replace a live record, keeping its expiry, and return what was there (``None``: nothing,
        and nothing is written)."""
        ...

    async def delete(self, kind: str, key: str) -> None:
        """Remove the record, if any."""
        ...

    async def hit(self, kind: str, key: str, window: float) -> int:
        """Count one more event in the current ``window`` (seconds) and return the count."""
        ...

    async def enroll(self, kind: str, member: str, ttl: float, limit: int) -> bool:
        """Add ``member`` to the bounded set ``kind`` for ``ttl`` seconds; ``False`` when the set
        already holds ``limit`` live members."""
        ...


class MemoryProxyStore:
    """The records of one instance, bounded per kind (:data:`MEMORY_CAP`)."""

    def __init__(self, *, cap: int = MEMORY_CAP, clock: Callable[[], float] = time.monotonic) -> None:
        self.cap = cap
        self._clock = clock
        self._kinds: dict[str, OrderedDict[str, tuple[float, Any]]] = {}

    def _table(self, kind: str) -> OrderedDict[str, tuple[float, Any]]:
        return self._kinds.setdefault(kind, OrderedDict())

    def _live(self, kind: str, key: str) -> Any:
        table = self._table(kind)
        found = table.get(key)
        if found is None:
            return None
        if found[0] <= self._clock():
            del table[key]
            return None
        return found[1]

    def _purge(self, table: OrderedDict[str, tuple[float, Any]]) -> None:
        now = self._clock()
        for key in [k for k, (exp, _) in table.items() if exp <= now]:
            del table[key]

    def _room(self, table: OrderedDict[str, tuple[float, Any]], key: str, cap: int) -> None:
        if key not in table and len(table) >= cap:
            self._purge(table)
            if len(table) >= cap:
                raise StoreFull

    async def put(self, kind: str, key: str, value: dict[str, Any], ttl: float) -> None:
        table = self._table(kind)
        self._room(table, key, self.cap)
        table[key] = (self._clock() + ttl, _json.loads(_json.dumps(value)))

    async def get(self, kind: str, key: str) -> dict[str, Any] | None:
        value = self._live(kind, key)
        return None if value is None else dict(value)

    async def take(self, kind: str, key: str) -> dict[str, Any] | None:
        value = self._live(kind, key)
        if value is not None:
            del self._table(kind)[key]
        return value  # type: ignore[no-any-return]

    async def swap(self, kind: str, key: str, value: dict[str, Any]) -> dict[str, Any] | None:
        old = self._live(kind, key)
        if old is None:
            return None
        table = self._table(kind)
        table[key] = (table[key][0], _json.loads(_json.dumps(value)))
        return old  # type: ignore[no-any-return]

    async def delete(self, kind: str, key: str) -> None:
        self._table(kind).pop(key, None)

    async def hit(self, kind: str, key: str, window: float) -> int:
        now = self._clock()
        slot = f"{key}:{int(now // window)}"
        table = self._table(kind)
        count = (self._live(kind, slot) or 0) + 1
        self._room(table, slot, self.cap)
        table[slot] = (now + window, count)
        return int(count)

    async def enroll(self, kind: str, member: str, ttl: float, limit: int) -> bool:
        table = self._table(kind)
        try:
            self._room(table, member, limit)
        except StoreFull:
            return False
        table[member] = (self._clock() + ttl, 1)
        return True

    def count(self, kind: str) -> int:
        """Live records of ``kind`` (tests)."""
        table = self._table(kind)
        self._purge(table)
        return len(table)


class RedisProxyStore:
    """The records in the app's Redis (standalone, Cluster or Sentinel), every key with a TTL."""

    def __init__(self, redis: Any, *, prefix: str = PREFIX) -> None:
        self.redis = redis
        self.prefix = prefix

    def _key(self, kind: str, key: str) -> str:
        return f"{self.prefix}{kind}:{key}"

    @staticmethod
    def _load(raw: Any) -> dict[str, Any] | None:
        if raw is None:
            return None
        value = _json.loads(raw)
        return value if isinstance(value, dict) else None

    async def put(self, kind: str, key: str, value: dict[str, Any], ttl: float) -> None:
        await self.redis.set(self._key(kind, key), _json.dumps(value), px=max(1, int(ttl * 1000)))

    async def get(self, kind: str, key: str) -> dict[str, Any] | None:
        return self._load(await self.redis.get(self._key(kind, key)))

    async def take(self, kind: str, key: str) -> dict[str, Any] | None:
        return self._load(await self.redis.getdel(self._key(kind, key)))

    async def swap(self, kind: str, key: str, value: dict[str, Any]) -> dict[str, Any] | None:
        old = await self.redis.set(self._key(kind, key), _json.dumps(value), xx=True, keepttl=True, get=True)
        return self._load(old)

    async def delete(self, kind: str, key: str) -> None:
        await self.redis.delete(self._key(kind, key))

    async def hit(self, kind: str, key: str, window: float) -> int:
        slot = self._key(kind, f"{key}:{int(time.time() // window)}")
        count = int(await self.redis.incr(slot))
        if count == 1:
            await self.redis.pexpire(slot, max(1, int(window * 1000)))
        return count

    async def enroll(self, kind: str, member: str, ttl: float, limit: int) -> bool:
        key = self._key(kind, "members")
        now = time.time()
        await self.redis.zremrangebyscore(key, "-inf", now)
        if int(await self.redis.zcard(key)) >= limit:
            return False
        await self.redis.zadd(key, {member: now + ttl})
        await self.redis.pexpire(key, max(1, int(ttl * 1000)))
        return True
