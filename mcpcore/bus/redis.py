"""The bus over Redis pub/sub: every instance delivers every event to its local subscribers.

Publishing goes through Redis only (the publishing instance receives its own events back), so
all instances see the same order. The listener reconnects by itself after Redis restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import orjson

from ..sessions.redis import guarded
from .base import BusEvent
from .memory import LocalBus

__all__ = ["RedisBus"]

log = logging.getLogger("mcpcore.bus")


class RedisBus:
    """A :class:`~mcpcore.bus.base.NotificationBus` on one Redis channel."""

    def __init__(self, client: Any, *, namespace: str = "mcpcore") -> None:
        self.r = client
        self.channel = f"{namespace}:bus"
        self._local = LocalBus()
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()

    async def publish(self, event: BusEvent) -> None:
        await guarded(self.r.publish(self.channel, orjson.dumps(event)))

    def subscribe(self, callback: Callable[[BusEvent], None]) -> Callable[[], None]:
        return self._local.subscribe(callback)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._listen())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.connected.wait(), 5)

    async def _listen(self) -> None:
        delay = 0.1
        while True:
            pubsub = self.r.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                self.connected.set()
                delay = 0.1
                while True:
                    msg = await pubsub.get_message(timeout=1.0)
                    if msg is None or msg.get("type") != "message":
                        continue
                    try:
                        event = orjson.loads(msg["data"])
                    except orjson.JSONDecodeError:
                        continue
                    if isinstance(event, dict):
                        self._local.deliver(event)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.connected.is_set():
                    log.warning("lost the Redis bus connection (%s); reconnecting", type(exc).__name__)
                self.connected.clear()
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        await self._local.close()
