"""The stores an app runs on, built once from the settings by the kind ``MCP_SESSION_STORE``
names (:mod:`mcpcore.store_kinds`; mcpcore's own in :mod:`mcpcore.builtin_stores`): in this
process's memory, or shared by every instance through Redis. A session store given to the app
(``McpApp(session_store=...)``) replaces the kind's.

:class:`Stores` is the only place that holds the parts a kind built; everything else reaches the
session store, the event buffer, the notification bus and the stream slots through their
Protocols (:class:`~mcpcore.sessions.base.SessionStore`, :class:`~mcpcore.sessions.events.EventBuffer`,
:class:`~mcpcore.bus.base.NotificationBus`, :class:`~mcpcore.sessions.streams.StreamSlots`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import types
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from .builtin_stores import sweep_period
from .bus.base import NotificationBus
from .config import Settings
from .server.registry import Registry
from .sessions.base import SessionStore
from .sessions.events import EventBuffer, MemoryEventBuffer
from .sessions.memory import MemorySessionStore
from .sessions.streams import StreamSlots
from .store_kinds import StoreKind, store_kind
from .tasks.base import TaskStore
from .transports.http.sessions import deliver_route
from .transports.live import LiveSessions

if TYPE_CHECKING:
    from .bus.redis import RedisBus
    from .context import ContextServices
    from .sessions.redis import RedisSessionStore

__all__ = ["Readiness", "Stores", "uses_request_input"]

log = logging.getLogger("mcpcore.app")

READINESS_CACHE_S = 0.5
"""How long ``/readyz`` reuses the stores' answer: a burst of probes costs Redis one write."""


class Stores:
    """Sessions, the resumable event buffer, the bus, the stream slots and the tasks of one app.

    ``shared`` says whether they live in Redis (every instance sees every session) or in this
    process. ``on_session_gone`` ends what this process holds for a session deleted or evicted
    here or, as the bus says, on another instance."""

    def __init__(self, settings: Settings, live: LiveSessions, *, session_store: SessionStore | None = None,
                 state_given: bool = False) -> None:
        s = settings
        self.sweep_period = sweep_period(s)
        self.live = live
        kind = self.kind = store_kind("sessions", s.session_store)
        self.state_kind: StoreKind | None = None if state_given else store_kind("state", s.storage_provider)
        """The kind that builds ``ctx.state``'s provider; ``None`` when the app was given one."""
        self.shared = kind.shared
        self.probes: list[Callable[[], tuple[dict[str, str], bool]]] = []
        """More parts for ``/readyz`` (proxied backends): ``() -> ({part: state}, whether it fails readiness)``."""
        assert kind.sessions is not None  # store_kind checked it
        parts = kind.sessions(s, live.is_busy)
        self.redis: Any = parts.redis
        self.bus: NotificationBus = parts.bus
        self.sessions: SessionStore = parts.sessions if session_store is None else session_store
        self.events: EventBuffer | None = parts.events
        self.stream_slots: StreamSlots = parts.stream_slots
        self.tasks: TaskStore = parts.tasks
        self._memory_events = parts.events if isinstance(parts.events, MemoryEventBuffer) else None
        self._memory_sessions = self.sessions if isinstance(self.sessions, MemorySessionStore) else None
        self._redis_sessions = cast("RedisSessionStore", self.sessions) if kind.redis and session_store is None \
            else None
        self._redis_bus = cast("RedisBus", self.bus) if kind.redis else None
        self._ready: tuple[float, dict[str, str]] | None = None  # (reusable until, the stores' checks)
        self._checking: asyncio.Task[dict[str, str]] | None = None
        if hasattr(self.sessions, "on_evict"):
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

    async def open(self, stack: contextlib.AsyncExitStack,
                   starts: Iterable[tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]] = (),
                   settings: Settings | None = None) -> None:
        """Start the bus (a client's answer or cancellation it carries reaches the handler waiting in
        this process) and keep shared caches coherent, then each extension's ``(start, close)`` (tasks
        listen to the bus); ``stack`` closes what this opened, in reverse. ``settings``: the app's, for a
        shared store's startup check."""
        if self.redis is not None:
            stack.push_async_callback(self.redis.aclose)
            from .redis_startup import check_redis

            assert settings is not None, "a shared store is checked with the app's settings"
            retrying = await check_redis(self.redis, settings, "the session store (MCP_SESSION_STORE=redis)")
            if retrying is not None:
                stack.callback(retrying.cancel)
        await self.bus.start()
        stack.push_async_callback(self.bus.close)
        self.bus.subscribe(self._on_route)
        if self._redis_sessions is not None and self._redis_bus is not None:  # records cached, kept coherent
            stack.callback(self._redis_sessions.attach(self._redis_bus))
        for start, close in starts:
            await start()
            stack.push_async_callback(close)
        if self.redis is not None:
            stack.callback(self.stream_slots.close)  # runs first: streams ending now touch Redis no more

    def _on_route(self, event: dict[str, Any]) -> None:
        if event.get("kind") == "route":
            deliver_route(self.live, event)

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


class Readiness:
    """``/readyz``'s check of one app: ``await readiness()`` is ``(ready, {part: "ok" | reason})``,
    whether every store it needs answers (``ctx.state``'s provider too, once open) and it has started."""

    __slots__ = ("services", "started", "stores")

    def __init__(self, stores: Stores, services: ContextServices) -> None:
        self.stores = stores
        self.services = services
        self.started = False
        """Set by the app once its startup is done, cleared at shutdown."""

    async def __call__(self) -> tuple[bool, dict[str, str]]:
        state = self.services.state
        return await self.stores.readiness(state.provider.ping if state is not None else None, self.started)
