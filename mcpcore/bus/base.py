"""The bus protocol."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["BusEvent", "NotificationBus"]

BusEvent = dict[str, Any]
"""``{"kind": "tools"|"prompts"|"resources"|"resource", "uri"?: str, "origin"?: session id}``."""


class NotificationBus(Protocol):
    """Publish events; subscribers are plain callbacks that must not block (they enqueue)."""

    async def publish(self, event: BusEvent) -> None: ...

    def subscribe(self, callback: Callable[[BusEvent], None]) -> Callable[[], None]:
        """Register ``callback``; returns a function that unregisters it."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...
