"""The one way an extension plugs into an app: :class:`Seam`, handed to its ``plug_into``.

Tasks, Agent Skills, the side routes and your own extensions register through it: definitions,
methods, the capability they declare, a ``subscriptions/listen`` topic, what runs at startup and
shutdown; they read the settings, the server core and the readiness check from it.
None of them sees the app itself (:class:`~mcpcore.McpApp`), only what the seam offers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..config import Settings
    from ..context import ContextServices
    from ..definitions.resources import CacheHint
    from ..protocol.versions import Era
    from ..server.core import Handler, ListenTopic, ServerCore, TaskCalls
    from ..server.dispatcher import Dispatcher

__all__ = ["Extension", "Seam"]


class Extension(Protocol):
    """Something an app serves beside its definitions (``McpApp(...).plug(extension)``)."""

    def plug_into(self, seam: Seam) -> None:
        """Register what the extension serves; runs once, while the app is built."""
        ...


class Seam:
    """What an extension may touch of the app it plugs into (see the module's docstring)."""

    __slots__ = ("_dispatcher", "readiness", "services", "starts")

    def __init__(self, dispatcher: Dispatcher, services: ContextServices,
                 readiness: Callable[[], Awaitable[tuple[bool, dict[str, str]]]]) -> None:
        self._dispatcher = dispatcher
        self.services = services
        """The services every request's context reaches (the notifier, ``ctx.state``, ...)."""
        self.readiness = readiness
        """The app's readiness check (``/readyz``): ``await seam.readiness()``."""
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

    def add_listen_topic(self, topic: ListenTopic) -> None:
        """What ``subscriptions/listen`` may carry beyond list changes and resource updates."""
        self._dispatcher.core.listen_topics.append(topic)

    def run_task_calls(self, calls: TaskCalls) -> None:
        """Run the tools declared ``task=`` through ``calls`` (their ``tools/call``)."""
        self._dispatcher.core.tasks = calls
        self._dispatcher.core.forget_capabilities()

    def on_start(self, start: Callable[[], Awaitable[None]], close: Callable[[], Awaitable[None]]) -> None:
        """Run ``start`` at startup, once the stores and the bus are open, and ``close`` at
        shutdown, before they close."""
        self.starts.append((start, close))
