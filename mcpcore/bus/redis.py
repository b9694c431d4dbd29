"""The bus over Redis pub/sub: every instance delivers every event to its local subscribers.

On a Redis Cluster it uses sharded pub/sub (``SPUBLISH``/``SSUBSCRIBE``, Redis 7): the channel
``{<namespace>}:bus`` lives in one slot, so a message goes to the one primary that owns it instead
of being broadcast over the cluster bus to every node, and the session store's scripts and
transactions (same hash tag) can announce changes in the same round trip as the write. When that
slot moves or its primary fails over, Redis ends the subscription (``sunsubscribe``) and the
listener subscribes again on the new owner, resetting as after any reconnect.

Publishing goes through Redis only (the publishing instance receives its own events back), so
all instances see the same order. The listener reconnects by itself after Redis restarts; since
events published meanwhile are lost, it then *resets*: callbacks registered with
:meth:`RedisBus.on_reset` (the session cache) drop whatever those events would have corrected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import orjson

from ..metrics import count_redis_error
from ..redis_client import guarded, is_cluster
from .base import BusEvent
from .memory import LocalBus

__all__ = ["RedisBus"]

log = logging.getLogger("mcpcore.bus")

_UNKNOWN = object()


class RedisBus:
    """A :class:`~mcpcore.bus.base.NotificationBus` on one Redis channel."""

    def __init__(self, client: Any, *, namespace: str = "mcpcore") -> None:
        self.r = client
        self.channel = f"{{{namespace}}}:bus"
        self.sharded = is_cluster(client)
        self._local = LocalBus()
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()
        self._resets: list[Callable[[], None]] = []
        self._conn: Any = None  # the subscribed connection
        self._stream: Any = None  # its socket reader as of the last reset (a reconnect replaces it)

    async def publish(self, event: BusEvent) -> None:
        data = orjson.dumps(event)
        await guarded(self.r.spublish(self.channel, data) if self.sharded else self.r.publish(self.channel, data))

    def subscribe(self, callback: Callable[[BusEvent], None]) -> Callable[[], None]:
        return self._local.subscribe(callback)

    def deliver(self, event: BusEvent) -> None:
        """Deliver ``event`` to this instance's subscribers only (no other instance sees it)."""
        self._local.deliver(event)

    def on_reset(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` whenever events may have been missed: the subscription was lost,
        or was (re-)established (also when redis-py reconnects it by itself). Returns the
        function that unregisters it."""
        self._resets.append(callback)

        def remove() -> None:
            if callback in self._resets:
                self._resets.remove(callback)

        return remove

    def _reset(self) -> None:
        for cb in list(self._resets):
            try:
                cb()
            except Exception:
                log.exception("a bus reset callback failed")

    @property
    def caught_up(self) -> bool:
        """Subscribed, on the connection seen at the last reset, with no received event still
        waiting to be read: every event Redis has delivered to this process so far (as far as
        the socket buffer shows) has reached the subscribers. Cheap; read on every request."""
        if not self.connected.is_set():
            return False
        reader = getattr(self._conn, "_reader", _UNKNOWN)
        if reader is _UNKNOWN:  # redis-py without an asyncio stream: rely on connected + resets
            return self._conn is not None
        return reader is not None and reader is self._stream and not getattr(reader, "_buffer", None) \
            and not reader.at_eof()

    def _adopt(self, conn: Any) -> None:
        """The subscription is (again) in place on ``conn``: reset, then trust its stream."""
        self._conn = conn
        self._reset()
        self._stream = getattr(conn, "_reader", None)

    def _reconnected(self, conn: Any) -> None:
        """redis-py reconnected the subscribed connection (and re-subscribed) by itself."""
        if conn is self._conn:
            log.info("the Redis bus connection was re-established; resetting")
            self._adopt(conn)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._listen())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.connected.wait(), 5)

    async def _listen(self) -> None:
        delay = 0.1
        while True:
            pubsub = self.r.pubsub(ignore_subscribe_messages=not self.sharded)
            conn: Any = None
            try:
                conn = await self._subscribe(pubsub)
                self._adopt(conn)
                conn.register_connect_callback(self._reconnected)
                self.connected.set()
                delay = 0.1
                while True:
                    msg = await (pubsub.get_sharded_message(timeout=1.0) if self.sharded
                                 else pubsub.get_message(timeout=1.0))
                    if msg is None:
                        continue
                    kind = msg.get("type")
                    if kind == "sunsubscribe":  # the slot moved or its primary changed
                        raise ConnectionError("the bus channel's shard ended the subscription")
                    if kind not in ("message", "smessage"):
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
                count_redis_error(exc)
                if self.connected.is_set():
                    log.warning("lost the Redis bus connection (%s); reconnecting", type(exc).__name__)
                self.connected.clear()
                self._conn = self._stream = None
                self._reset()
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            finally:
                self.connected.clear()
                self._conn = self._stream = None
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.deregister_connect_callback(self._reconnected)
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    async def _subscribe(self, pubsub: Any) -> Any:
        """Subscribe ``pubsub`` to the channel; returns the connection that carries it."""
        if not self.sharded:
            await pubsub.subscribe(self.channel)
            return pubsub.connection
        await self.r.initialize()  # the slot map: ssubscribe needs the channel's owner
        await pubsub.ssubscribe(self.channel)
        inner = next(iter(pubsub.node_pubsub_mapping.values()), None)  # the channel's slot owner
        if inner is None or inner.connection is None:
            raise ConnectionError("no cluster node owns the bus channel's slot")
        return inner.connection

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        self._resets.clear()
        await self._local.close()
