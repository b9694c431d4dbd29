"""The stores an app runs on, chosen once from the settings: in this process's memory, or
shared by every instance through Redis (``MCP_SESSION_STORE``).

:class:`Stores` is the only place that knows which kind it built; everything else reaches the
session store, the event buffer, the notification bus and the stream slots through their
Protocols (:class:`~mcpcore.sessions.base.SessionStore`, :class:`~mcpcore.sessions.events.EventBuffer`,
:class:`~mcpcore.bus.base.NotificationBus`, :class:`~mcpcore.sessions.streams.StreamSlots`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import types
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .bus.base import NotificationBus
from .bus.memory import LocalBus
from .config import Settings
from .server.registry import Registry
from .sessions.base import SessionStore
from .sessions.events import EventBuffer, MemoryEventBuffer
from .sessions.memory import MemorySessionStore
from .sessions.streams import MemoryStreamSlots, StreamSlots
from .storage.base import StorageProvider
from .storage.memory import MemoryStorage
from .tasks.base import TaskBounds, TaskStore
from .tasks.memory import MemoryTaskStore
from .transports.live import LiveSessions

if TYPE_CHECKING:
    from .bus.redis import RedisBus
    from .sessions.redis import RedisSessionStore
    from .tasks.service import TaskService

__all__ = ["Stores", "redis_client", "state_provider", "uses_request_input"]

log = logging.getLogger("mcpcore.app")

READINESS_CACHE_S = 0.5
"""How long ``/readyz`` reuses the stores' answer: a burst of probes costs Redis one write."""


class Stores:
    """Sessions, the resumable event buffer, the bus, the stream slots and the tasks of one app.

    ``shared`` says whether they live in Redis (every instance sees every session) or in this
    process. ``on_session_gone`` ends what this process holds for a session deleted or evicted
    here or, as the bus says, on another instance."""

    def __init__(self, settings: Settings, live: LiveSessions) -> None:
        s = self.settings = settings
        sweep_period = self.sweep_period = max(1.0, min(60.0, s.session_idle_ms / 3000))
        self.live = live
        self.shared = s.session_store == "redis"
        self.probes: list[Callable[[], tuple[dict[str, str], bool]]] = []
        """More parts for ``/readyz`` (proxied backends): ``() -> ({part: state}, whether it fails readiness)``."""
        self.redis: Any = None
        self.bus: NotificationBus
        self.sessions: SessionStore
        self.events: EventBuffer | None
        self.stream_slots: StreamSlots
        self.tasks: TaskStore
        self._memory_events: MemoryEventBuffer | None = None
        self._memory_sessions: MemorySessionStore | None = None
        self._redis_sessions: RedisSessionStore | None = None
        self._redis_bus: RedisBus | None = None
        self._ready: tuple[float, dict[str, str]] | None = None  # (reusable until, the stores' checks)
        self._checking: asyncio.Task[dict[str, str]] | None = None
        if self.shared:
            self.redis = redis_client(s)
            from .bus.redis import RedisBus
            from .sessions.redis import RedisSessionStore
            from .sessions.redis_events import RedisEventBuffer
            from .sessions.streams import RedisStreamSlots

            self._redis_bus = self.bus = RedisBus(self.redis)
            self._redis_sessions = self.sessions = RedisSessionStore(
                self.redis, idle_ms=s.session_idle_ms, max_sessions=s.max_sessions,
                max_per_identity=s.max_sessions_per_identity)
            self.events = RedisEventBuffer(self.redis, max_events=s.resumability_max_events,
                                           ttl_ms=s.resumability_ttl_ms, max_bytes=s.resumability_max_bytes) \
                if s.resumability else None
            self.stream_slots = RedisStreamSlots(self.redis, s.max_streams_per_session,
                                                 lease_ms=int(3000 * max(10.0, sweep_period)))
            from .tasks.redis import RedisTaskStore

            self.tasks = RedisTaskStore(self.redis, bounds=TaskBounds.from_settings(s))
        else:
            self.bus = LocalBus()
            self._memory_sessions = self.sessions = MemorySessionStore(
                idle_ms=s.session_idle_ms, max_sessions=s.max_sessions, max_per_identity=s.max_sessions_per_identity,
                is_busy=live.is_busy)
            self._memory_events = self.events = MemoryEventBuffer(
                s.resumability_max_events, s.resumability_ttl_ms, max_bytes=s.resumability_max_bytes,
                max_total_bytes=s.resumability_max_total_bytes) if s.resumability else None
            self.stream_slots = MemoryStreamSlots(s.max_streams_per_session)
            self.tasks = MemoryTaskStore(TaskBounds.from_settings(s))
        self.sessions.on_evict = self.on_session_gone

    def on_session_gone(self, session_id: str) -> None:
        """End the streams this process holds for the session, and drop an in-process event
        buffer (a shared one was dropped by whoever ended the session, in the same write)."""
        self.live.release(session_id)
        if self._memory_events is not None:
            self._memory_events.release_nowait(session_id)

    def sessions_active(self) -> int:
        """For ``mcp.sessions.active``: the sessions in this process's memory store; with Redis,
        the sessions this instance is serving now (an open stream or a request in flight), so
        the instances' values add up without counting the shared store once per instance."""
        if self._memory_sessions is not None:
            return len(self._memory_sessions)
        return len(self.live)

    def buffer_bytes(self) -> tuple[int, int] | None:
        """``(bytes in all, bytes of the largest session)`` of buffered SSE events this process
        holds; ``None`` with Redis (the stream of each session is bounded there by the same budget)."""
        if self._memory_events is None:
            return None
        return self._memory_events.total_bytes, self._memory_events.largest_session_bytes()

    async def open(self, stack: contextlib.AsyncExitStack, on_route: Callable[[dict[str, Any]], None],
                   tasks: TaskService | None = None) -> None:
        """Start the bus (``on_route`` gets its events) and keep shared caches coherent, then
        ``tasks`` (they listen to the bus); ``stack`` closes what this opened, in reverse."""
        if self.redis is not None:
            stack.push_async_callback(self.redis.aclose)
            from .redis_startup import check_redis

            retrying = await check_redis(self.redis, self.settings, "the session store (MCP_SESSION_STORE=redis)")
            if retrying is not None:
                stack.callback(retrying.cancel)
        await self.bus.start()
        stack.push_async_callback(self.bus.close)
        self.bus.subscribe(on_route)
        if self._redis_sessions is not None and self._redis_bus is not None:  # records cached, kept coherent
            stack.callback(self._redis_sessions.attach(self._redis_bus))
        if tasks is not None:
            await tasks.start()
            stack.push_async_callback(tasks.close)
        if self.redis is not None:
            stack.callback(self.stream_slots.close)  # runs first: streams ending now touch Redis no more

    async def readiness(self, state_ping: Callable[[], Awaitable[Any]] | None,
                        started: bool) -> tuple[bool, dict[str, str]]:
        """Whether every store takes a write: ``(ready, {part: "ok" | reason})`` (``state_ping``:
        the ``ctx.state`` provider's check, once it is open). The stores' answer is reused for
        :data:`READINESS_CACHE_S`, and probes that arrive while it is being checked share the check."""
        loop = asyncio.get_running_loop()
        ready = self._ready
        if ready is None or loop.time() >= ready[0]:
            checking = self._checking
            if checking is None:
                checking = self._checking = loop.create_task(self._check(state_ping))
            checks = await asyncio.shield(checking)
        else:
            checks = ready[1]
        checks = dict(checks)
        if not started:
            checks["app"] = "not started"
        ok = all(v == "ok" for v in checks.values())
        for probe in self.probes:
            parts, failing = probe()
            checks.update(parts)
            ok = ok and not failing
        return ok, checks

    async def _check(self, state_ping: Callable[[], Awaitable[Any]] | None) -> dict[str, str]:
        checks: dict[str, str] = {}

        async def probe(name: str, fn: Any) -> None:
            try:
                await asyncio.wait_for(fn(), 2)
                checks[name] = "ok"
            except Exception as exc:
                checks[name] = getattr(exc, "message", None) or type(exc).__name__

        try:
            if state_ping is not None:
                await probe("state", state_ping)
            await self.probe(probe, checks)
        finally:
            self._checking = None
        self._ready = (asyncio.get_running_loop().time() + READINESS_CACHE_S, checks)
        return checks

    async def sweep_forever(self) -> None:
        """Run :meth:`sweep` every :attr:`sweep_period` seconds until cancelled."""
        while True:
            await asyncio.sleep(self.sweep_period)
            try:
                await self.sweep()
            except Exception:
                log.warning("session sweep failed", exc_info=True)

    async def sweep(self) -> None:
        """Periodic upkeep: renew stream leases, drop expired sessions (and tasks, in memory), slide
        the expiry of the sessions this instance is serving (ending those that vanished unannounced)."""
        await self.stream_slots.renew()
        await self.sessions.sweep()
        await self.tasks.sweep()
        if self._memory_events is not None:
            self._memory_events.sweep()
        if self._redis_sessions is not None:
            for sid in await self._redis_sessions.keep_alive(self.live.busy_ids()):
                self.on_session_gone(sid)

    async def probe(self, check: Callable[[str, Callable[[], Awaitable[None]]], Awaitable[None]],
                    checks: dict[str, str]) -> None:
        """Add the session store's readiness (a write) and the bus's to ``checks``."""
        if self._redis_sessions is not None:
            await check("sessions", self._redis_sessions.ping)
        if self._redis_bus is not None:
            checks["bus"] = "ok" if self._redis_bus.connected.is_set() else "not connected"


def redis_client(settings: Settings) -> Any:
    """The app's Redis client for ``MCP_REDIS_MODE`` (lazily connecting; the app owns and closes it)."""
    from .redis_client import create_redis_client

    return create_redis_client(settings)


def state_provider(settings: Settings, given: StorageProvider | None) -> StorageProvider:
    """The ``ctx.state`` provider: the app's own, else the one ``STORAGE_PROVIDER_TYPE`` names."""
    if given is not None:
        return given
    if settings.storage_provider == "in-memory":
        return MemoryStorage(max_entries=settings.storage_max_entries)
    from .storage.factory import create_provider
    return create_provider(settings)


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


_ASKING = frozenset({"request_input", "elicit", "sample", "list_roots"})


def uses_request_input(registry: Registry) -> bool:
    """Whether any definition's function asks the caller: refers to ``request_input`` or to an
    awaited ask (``elicit``, ``sample``, ``list_roots``), whose answers travel in the request
    state (a cheap static check)."""
    defs: list[Any] = [*registry.tools.values(), *registry.prompts.values(), *registry.resources.values(),
                       *registry.templates]
    for d in defs:
        code = getattr(d.fn, "__code__", None)
        if code is not None and not _ASKING.isdisjoint(_code_names(code)):
            return True
    return False
