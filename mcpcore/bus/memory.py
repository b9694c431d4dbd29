"""The in-process bus."""

from __future__ import annotations

import logging
from collections.abc import Callable

from .base import BusEvent

__all__ = ["LocalBus"]

log = logging.getLogger("mcpcore.bus")


class LocalBus:
    """Delivers each event to every subscriber of this process; publishing with no
    subscriber is a no-op."""

    def __init__(self) -> None:
        self._subscribers: list[Callable[[BusEvent], None]] = []

    async def publish(self, event: BusEvent) -> None:
        self.deliver(event)

    def deliver(self, event: BusEvent) -> None:
        for cb in list(self._subscribers):
            try:
                cb(event)
            except Exception:
                log.exception("a bus subscriber failed")

    def subscribe(self, callback: Callable[[BusEvent], None]) -> Callable[[], None]:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        self._subscribers.clear()
