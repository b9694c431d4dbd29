"""A stream's pending messages, bounded: a reader that falls too far behind loses its stream."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

__all__ = ["BoundedQueue"]

T = TypeVar("T")


class BoundedQueue(Generic[T]):
    """At most ``limit`` items wait. ``put_nowait(None)`` ends the queue: ``get`` hands out what
    is left, then ``None``. One item past the limit ends it at once, dropping what waits
    (``overflowed`` is then true): the stream's client stopped reading, so its stream is closed
    rather than growing the server's memory; it may reconnect and resume from the event buffer."""

    __slots__ = ("_closed", "_items", "_limit", "_waiter", "overflowed")

    def __init__(self, limit: int) -> None:
        self._items: deque[T] = deque()
        self._limit = limit
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None
        self.overflowed = False

    def __len__(self) -> int:
        return len(self._items)

    def put_nowait(self, item: T | None) -> None:
        if item is None:
            self._closed = True
        elif self._closed:
            return
        elif len(self._items) >= self._limit:
            self.overflowed = self._closed = True
            self._items.clear()
        else:
            self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> T | None:
        """The next item; ``None`` once the queue ended and is empty."""
        while not self._items:
            if self._closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()
