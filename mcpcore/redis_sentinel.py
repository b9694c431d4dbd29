"""The client for ``MCP_REDIS_MODE=sentinel``: the primary found through the sentinels, and its
connections moved as soon as the sentinels start a failover.

redis-py's ``SentinelConnectionPool`` asks a sentinel for the primary's address whenever it opens
a connection, but connections already open stay where they are. After a planned
``SENTINEL FAILOVER`` the old primary goes on accepting writes until the sentinels demote it,
seconds later, and everything written there in between is lost; a bus subscription on it hears
nothing the new primary publishes. So each client follows the sentinels' announcements:

* ``+failover-state-send-slaveof-noone`` (a replica is being promoted): every connection is
  closed and new ones go to that replica. Until its promotion completes it answers writes with
  ``READONLY``, which the caller reports as 503: the switch costs a short outage instead of lost
  writes.
* ``+switch-master``: new connections go to the new primary it names, and every connection is
  closed once more in case some reached the old one. The announced address is used for the next
  30 s rather than asking a sentinel, since a sentinel that has not heard of the switch yet
  (they tell each other every 2 s) would still name the old primary.
* ``-failover-abort-*``: back to asking the sentinels.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from functools import cache
from typing import Any

from .config import Settings

__all__ = ["sentinel_client"]

log = logging.getLogger("mcpcore.redis")

_CONNECT_TIMEOUT = 2.0
_ANNOUNCED_FOR_S = 30.0  # how long an announced address is used instead of asking the sentinels


def sentinel_client(settings: Settings, url: str, opts: dict[str, Any], health_check_interval: int) -> Any:
    """A ``redis.asyncio.Redis`` for the primary named ``MCP_REDIS_SENTINEL_MASTER``, found through
    ``MCP_REDIS_SENTINELS``; ``url`` (``REDIS_URL``, may be empty) gives its credentials, database
    and TLS. Closing the client closes the sentinel connections too."""
    from redis.asyncio.connection import parse_url
    from redis.asyncio.sentinel import Sentinel

    primary: dict[str, Any] = {}
    if url:
        parsed = parse_url(url)
        primary = {k: v for k, v in parsed.items() if k not in ("host", "port", "path", "connection_class")}
        if url.startswith("rediss://"):
            primary["ssl"] = True
    sentinel_opts: dict[str, Any] = {"socket_timeout": _CONNECT_TIMEOUT, "socket_connect_timeout": _CONNECT_TIMEOUT}
    if settings.redis_sentinel_password is not None:
        sentinel_opts["password"] = settings.redis_sentinel_password.get_secret_value()
    hosts = [(hp.rpartition(":")[0], int(hp.rpartition(":")[2])) for hp in settings.redis_sentinels]
    sentinel = Sentinel(hosts, sentinel_kwargs=sentinel_opts)  # type: ignore[no-untyped-call]
    client_class, pool_class = _classes()
    return sentinel.master_for(str(settings.redis_sentinel_master), redis_class=client_class,
                               connection_pool_class=pool_class, health_check_interval=health_check_interval,
                               **opts, **primary)


@cache
def _classes() -> tuple[type[Any], type[Any]]:
    from redis.asyncio import Redis
    from redis.asyncio.sentinel import SentinelConnectionPool

    class FollowingPool(SentinelConnectionPool):
        """Connects where the sentinels last announced the primary (for a while), else where
        they say it is."""

        announced: tuple[str, int] | None = None
        announced_at = 0.0

        async def get_master_address(self) -> Any:
            target = self.announced
            if target is not None:
                if time.monotonic() - self.announced_at < _ANNOUNCED_FOR_S:
                    return target
                self.announced = None
            return await super().get_master_address()  # type: ignore[no-untyped-call]

        async def move(self, target: tuple[str, int] | None, why: str) -> None:
            """Connect to ``target`` from now on (``None``: where the sentinels say) and close
            every connection, those in use included."""
            log.warning("Redis failover: %s; reconnecting", why)
            self.announced, self.announced_at = target, time.monotonic()
            self.master_address = None
            await self.disconnect(inuse_connections=True)

    class SentinelPrimary(Redis):
        """The primary's client; its first command starts following the sentinels."""

        _watch: asyncio.Task[None] | None = None

        async def execute_command(self, *args: Any, **options: Any) -> Any:
            if self._watch is None:
                self._watch = asyncio.get_running_loop().create_task(_follow(self.connection_pool))
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]

        async def aclose(self, close_connection_pool: bool | None = None) -> None:
            watch, self._watch = self._watch, None
            if watch is not None:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await watch
            await super().aclose(close_connection_pool)
            pool: Any = self.connection_pool
            for sentinel in pool.sentinel_manager.sentinels:
                await sentinel.aclose()

    return SentinelPrimary, FollowingPool


async def _follow(pool: Any) -> None:
    """Read one sentinel's announcements (the next one when it fails) and move ``pool``'s
    connections on every step of a failover of its primary."""
    sentinels = pool.sentinel_manager.sentinels
    name = pool.service_name
    turn = 0
    while True:
        pubsub = sentinels[turn % len(sentinels)].pubsub(ignore_subscribe_messages=True)
        turn += 1
        try:
            await pubsub.psubscribe("*")
            known = pool.announced or pool.master_address  # announcements missed while none was followed?
            if known is not None and await pool.sentinel_manager.discover_master(name) != known:
                await pool.move(None, "the primary changed while no sentinel was followed")
            while True:
                msg = await pubsub.get_message(timeout=1.0)
                if msg is not None:
                    await _on_announcement(pool, name, _text(msg.get("channel")), _text(msg.get("data")).split())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("following the sentinels failed (%s); trying the next one", type(exc).__name__)
            await asyncio.sleep(0.5)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()


async def _on_announcement(pool: Any, name: str, channel: str, words: list[str]) -> None:
    # <kind> <name> <ip> <port> @ <master name> <master ip> <master port>
    about_ours = len(words) >= 6 and words[4] == "@" and words[5] == name
    if channel == "+failover-state-send-slaveof-noone" and about_ours and words[3].isdigit():
        await pool.move((words[2], int(words[3])), f"the sentinels are promoting {words[2]}:{words[3]}")
    elif channel == "+switch-master" and len(words) == 5 and words[0] == name and words[4].isdigit():
        # <name> <old ip> <old port> <new ip> <new port>
        await pool.move((words[3], int(words[4])), f"the sentinels promoted {words[3]}:{words[4]}")
    elif channel.startswith("-failover-abort") and pool.announced is not None:
        await pool.move(None, f"the failover was aborted ({channel})")


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value or "")
