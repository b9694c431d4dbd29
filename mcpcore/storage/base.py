"""The storage provider protocol behind ``ctx.state``: async, tenant-first, bytes in and out.

Providers are deliberately dumb: they store JSON bytes under ``(tenant, key)``. Key rules,
serialisation, tenant checks and cursors live once in :class:`~mcpcore.storage.service.StateService`
so every provider behaves identically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

__all__ = ["ListPage", "StorageProvider"]

ListPage = tuple[list[tuple[str, bytes]], bool]
"""``(items, more)``: up to ``limit`` ``(key, value)`` pairs in key order, and whether more follow."""


@runtime_checkable
class StorageProvider(Protocol):
    """What a ``ctx.state`` backend implements. ``ttl`` is in seconds; ``None`` keeps forever.

    Expired entries are never returned by any method. ``take`` is atomic: of any number of
    concurrent callers (across processes, for shared providers) exactly one gets the value.
    """

    async def get(self, tenant: str, key: str) -> bytes | None: ...

    async def set(self, tenant: str, key: str, value: bytes, ttl: float | None = None) -> None: ...

    async def delete(self, tenant: str, key: str) -> bool: ...

    async def take(self, tenant: str, key: str) -> bytes | None: ...

    async def get_many(self, tenant: str, keys: Sequence[str]) -> dict[str, bytes]: ...

    async def set_many(self, tenant: str, items: Mapping[str, bytes], ttl: float | None = None) -> None: ...

    async def delete_many(self, tenant: str, keys: Sequence[str]) -> int: ...

    async def list(self, tenant: str, prefix: str, after: str | None, limit: int) -> ListPage: ...

    async def clear(self, tenant: str) -> int: ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...
