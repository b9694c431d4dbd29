"""The one way an extension plugs into an app: :class:`Seam`, handed to its ``plug_into``.

Tasks, Agent Skills, the side routes, composition (``app.mount``) and your own extensions register
through it: definitions, methods, the capability they declare, a ``subscriptions/listen`` topic,
middleware, a readiness probe, what runs at startup and shutdown; they read the settings, the server
core, the registry, the notifier, the Redis client, whether the app has started and the readiness
check from it. None of them sees the app itself (:class:`~mcpcore.McpApp`), only what the seam
offers. A mounted child is seen through its own seam too: its middleware, its own ``ctx.state``
layer and its ``setup`` hook, which start with the parent (:attr:`Seam.own_state`, :attr:`Seam.setup`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..config import Settings
    from ..context import ContextServices
    from ..definitions.resources import CacheHint
    from ..layer import Layer
    from ..middleware.base import Middleware
    from ..protocol.versions import Era
    from ..server.core import Handler, ListenTopic, ServerCore, TaskCalls
    from ..server.dispatcher import Dispatcher
    from ..server.notify import Notifier
    from ..server.registry import Registry

__all__ = ["Extension", "Probe", "ReadinessCheck", "Seam"]

Probe = Callable[[], tuple[dict[str, str], bool]]
"""More parts for ``/readyz``: ``() -> ({part: state}, whether one of them fails readiness)``."""


class Extension(Protocol):
    """Something an app serves beside its definitions (``McpApp(...).plug(extension)``)."""

    def plug_into(self, seam: Seam) -> None:
        """Register what the extension serves; runs once, while the app is built."""
        ...


class ReadinessCheck(Protocol):
    """The app's readiness check, and the one holder of whether the app has started."""

    started: bool

    async def __call__(self) -> tuple[bool, dict[str, str]]: ...


class Seam:
    """What an extension may touch of the app it plugs into (see the module's docstring)."""

    __slots__ = ("_dispatcher", "_probes", "middleware", "notifier", "own_state", "readiness", "redis", "services",
                 "setup", "starts")

    def __init__(self, dispatcher: Dispatcher, services: ContextServices, readiness: ReadinessCheck, notifier: Notifier,
                 *, middleware: list[Middleware], probes: list[Probe], redis: Any = None,
                 own_state: Layer | None = None,
                 setup: Callable[[], AbstractAsyncContextManager[Any]] | None = None) -> None:
        self._dispatcher = dispatcher
        self.services = services
        """The services every request's context reaches (the notifier, ``ctx.state``, ...)."""
        self.readiness = readiness
        """The app's readiness check (``/readyz``): ``await seam.readiness()``."""
        self.notifier = notifier
        """Publishes the app's notifications (``notifier.publish(event)``) on its bus (``notifier.bus``)."""
        self.middleware = middleware
        """The app's middleware, outermost first (:meth:`add_middleware` adds one)."""
        self._probes = probes
        self.redis = redis
        """The app's Redis client when its stores live in Redis, else ``None``."""
        self.own_state = own_state
        """The app's ``ctx.state`` layer when it was given its own ``storage=``, else ``None``."""
        self.setup = setup
        """The app's ``setup`` hook as a context manager (entered at startup), or ``None``."""
        self.starts: list[tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]] = []
        """``(start, close)`` of each extension's background work, in order of registration."""

    @property
    def core(self) -> ServerCore:
        """The server core method handlers see (registry, settings, notifier, sessions)."""
        return self._dispatcher.core

    @property
    def settings(self) -> Settings:
        """The app's settings."""
        return self._dispatcher.core.settings

    @property
    def registry(self) -> Registry:
        """The app's definitions."""
        return self._dispatcher.core.registry

    @property
    def server_info(self) -> dict[str, Any]:
        """The app's ``serverInfo`` (``name``, ``version``, ...)."""
        return self._dispatcher.core.server_info

    @property
    def started(self) -> bool:
        """Whether the app has started (and not shut down since)."""
        return self.readiness.started

    def add(self, *definitions: Any) -> None:
        """Register definitions (tools, resources, prompts) as the app's own."""
        for d in definitions:
            self._dispatcher.core.registry.add(d)

    def add_method(self, method: str, handler: Handler, *, gate: str | None = None,
                   cache_hint: CacheHint | None = None, era: Era | None = None) -> None:
        """Serve ``method`` on both eras, or only on ``era`` (``gate``: the capability it needs;
        ``cache_hint``: its 2026-07-28 results' ``ttlMs``/``cacheScope``)."""
        self._dispatcher.add_method(method, handler, gate=gate, cache_hint=cache_hint, era=era)

    def declare(self, identifier: str, settings: dict[str, Any]) -> None:
        """Declare the extension ``identifier`` under ``capabilities.extensions`` (both eras)."""
        self._dispatcher.declare_extension(identifier, settings)

    def declare_kind(self, kind: str) -> None:
        """Serve ``kind``'s methods (``tools``, ``prompts``, ``resources``) while none is registered."""
        self._dispatcher.declare(kind)

    def add_listen_topic(self, topic: ListenTopic) -> None:
        """What ``subscriptions/listen`` may carry beyond list changes and resource updates."""
        self._dispatcher.core.listen_topics.append(topic)

    def add_middleware(self, layer: Middleware) -> None:
        """Add a layer inside the app's middleware (before the app starts)."""
        if self.started:
            raise RuntimeError("add middleware before the app starts")
        self.middleware.append(layer)
        self._dispatcher.use(self.middleware)

    def add_probe(self, probe: Probe) -> None:
        """Report more parts in ``/readyz`` (see :data:`Probe`)."""
        self._probes.append(probe)

    def run_task_calls(self, calls: TaskCalls) -> None:
        """Run the tools declared ``task=`` through ``calls`` (their ``tools/call``)."""
        self._dispatcher.core.tasks = calls
        self._dispatcher.core.forget_capabilities()

    def on_start(self, start: Callable[[], Awaitable[None]], close: Callable[[], Awaitable[None]]) -> None:
        """Run ``start`` at startup, once the stores and the bus are open, and ``close`` at
        shutdown, before they close."""
        self.starts.append((start, close))
