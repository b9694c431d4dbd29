"""In-process storage: per-entry TTL, a capacity bound, lock-free atomic ``take``."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Mapping, Sequence

from ..errors import JsonRpcErrorCode, McpError
from .base import ListPage

__all__ = ["MemoryStorage"]


class _Tenant:
    __slots__ = ("data", "dirty", "sorted_keys")

    def __init__(self) -> None:
        self.data: dict[str, tuple[bytes, float | None]] = {}
        self.sorted_keys: list[str] = []
        self.dirty = False


class MemoryStorage:
    """A :class:`~mcpcore.storage.base.StorageProvider` in a dict; lost on restart.

    Every method runs without awaiting, so each is atomic on the event loop (``take`` included).

    Args:
        max_entries: total entries across tenants; a write that would exceed it after dropping
            expired entries raises ``McpError(ServiceUnavailable)`` with ``data.reason = "storage_full"``.
    """

    def __init__(self, max_entries: int = 10_000, *, clock: Callable[[], float] | None = None) -> None:
        self._tenants: dict[str, _Tenant] = {}
        self._count = 0
        self.max_entries = max_entries
        self._now: Callable[[], float] = clock if clock is not None else time.monotonic

    def _t(self, tenant: str) -> _Tenant:
        t = self._tenants.get(tenant)
        if t is None:
            t = self._tenants[tenant] = _Tenant()
        return t

    def _live(self, t: _Tenant, key: str, now: float) -> bytes | None:
        entry = t.data.get(key)
        if entry is None:
            return None
        value, exp = entry
        if exp is not None and exp <= now:
            del t.data[key]
            t.dirty = True
            self._count -= 1
            return None
        return value

    def _purge(self) -> None:
        now = self._now()
        for t in self._tenants.values():
            dead = [k for k, (_, exp) in t.data.items() if exp is not None and exp <= now]
            for k in dead:
                del t.data[k]
            if dead:
                t.dirty = True
                self._count -= len(dead)

    def _reserve(self, new_entries: int) -> None:
        if self._count + new_entries <= self.max_entries:
            return
        self._purge()
        if self._count + new_entries > self.max_entries:
            raise McpError(
                JsonRpcErrorCode.ServiceUnavailable,
                f"In-memory storage is full ({self.max_entries} entries); delete entries, use a TTL, "
                "or raise STORAGE_MAX_ENTRIES.",
                {"reason": "storage_full", "maxEntries": self.max_entries},
            )

    def _put(self, t: _Tenant, key: str, value: bytes, exp: float | None) -> None:
        if key not in t.data:
            self._count += 1
            t.dirty = True
        t.data[key] = (value, exp)

    async def get(self, tenant: str, key: str) -> bytes | None:
        t = self._tenants.get(tenant)
        return None if t is None else self._live(t, key, self._now())

    async def set(self, tenant: str, key: str, value: bytes, ttl: float | None = None) -> None:
        t = self._t(tenant)
        if key not in t.data:
            self._reserve(1)
        self._put(t, key, value, None if ttl is None else self._now() + ttl)

    async def delete(self, tenant: str, key: str) -> bool:
        return await self.take(tenant, key) is not None

    async def take(self, tenant: str, key: str) -> bytes | None:
        t = self._tenants.get(tenant)
        if t is None:
            return None
        value = self._live(t, key, self._now())
        if value is not None:
            del t.data[key]
            t.dirty = True
            self._count -= 1
        return value

    async def get_many(self, tenant: str, keys: Sequence[str]) -> dict[str, bytes]:
        t = self._tenants.get(tenant)
        if t is None:
            return {}
        now = self._now()
        out: dict[str, bytes] = {}
        for k in keys:
            v = self._live(t, k, now)
            if v is not None:
                out[k] = v
        return out

    async def set_many(self, tenant: str, items: Mapping[str, bytes], ttl: float | None = None) -> None:
        t = self._t(tenant)
        self._reserve(sum(1 for k in items if k not in t.data))
        exp = None if ttl is None else self._now() + ttl
        for k, v in items.items():
            self._put(t, k, v, exp)

    async def delete_many(self, tenant: str, keys: Sequence[str]) -> int:
        n = 0
        for k in dict.fromkeys(keys):
            if await self.take(tenant, k) is not None:
                n += 1
        return n

    async def list(self, tenant: str, prefix: str, after: str | None, limit: int) -> ListPage:
        t = self._tenants.get(tenant)
        if t is None:
            return [], False
        if t.dirty:
            t.sorted_keys = sorted(t.data)
            t.dirty = False
        keys = t.sorted_keys
        start = bisect.bisect_right(keys, after) if after is not None and after >= prefix else bisect.bisect_left(
            keys, prefix)
        now = self._now()
        items: list[tuple[str, bytes]] = []
        i = start
        while i < len(keys):
            k = keys[i]
            if not k.startswith(prefix):
                break
            entry = t.data.get(k)
            if entry is not None and (entry[1] is None or entry[1] > now):
                if len(items) == limit:
                    return items, True
                items.append((k, entry[0]))
            i += 1
        return items, False

    async def clear(self, tenant: str) -> int:
        t = self._tenants.pop(tenant, None)
        if t is None:
            return 0
        self._count -= len(t.data)
        now = self._now()
        return sum(1 for _, exp in t.data.values() if exp is None or exp > now)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        return None
