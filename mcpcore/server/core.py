"""What a method handler may touch: the server core.

Handlers (``tools/call``, ``resources/read``, an extension's methods, ...) receive this, not the
:class:`~mcpcore.server.dispatcher.Dispatcher`: the definitions, the settings, the stores and
services a method reads or writes, and the capabilities the server declares. Routing, result
shaping and the list cache stay in the dispatcher.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..auth.scopes import check_scopes
from ..config import Settings
from ..context import Inbound
from ..definitions.depends import DependencyOverrides
from ..errors import McpError
from ..protocol.extensions import APP_MIME_TYPE, APPS, TASKS
from ..security.sealing import RequestStateSealer
from ..sessions.streams import CallerStreams
from .closing import Closing
from .notify import Notifier
from .registry import Registry
from .visibility import may_see_uri

if TYPE_CHECKING:
    from ..bus.base import BusEvent
    from ..definitions.tools import ToolDefinition
    from ..sessions.base import SessionRecord, SessionStore
    from ..telemetry import Telemetry

__all__ = ["Handler", "ListenTopic", "ServerCore", "TaskCalls"]

# The 2025-11-25 ``tasks`` capability of a server whose tools may run as tasks.
_LEGACY_TASKS: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


class TaskCalls(Protocol):
    """How ``tools/call`` reaches the tasks of an app (:mod:`mcpcore.tasks`) for a tool
    declared with ``task=``."""

    def call(self, core: ServerCore, tool: ToolDefinition, params: dict[str, Any],
             req: Inbound) -> Awaitable[dict[str, Any]]: ...


class ListenTopic(Protocol):
    """A kind of notification an extension adds to ``subscriptions/listen`` (the tasks'
    ``taskIds``), registered in ``core.listen_topics``."""

    async def honor(self, core: ServerCore, requested: dict[str, Any], req: Inbound) -> dict[str, Any]:
        """The part of the requested filter this topic honours (added to the acknowledgement);
        raises ``McpError`` for a malformed or unauthorised request."""
        ...

    def wants(self, event: BusEvent, honored: dict[str, Any]) -> bool:
        """Whether ``event`` is one of this topic's, for this stream (cheap: runs per event)."""
        ...

    async def notification(self, event: BusEvent, honored: dict[str, Any], req: Inbound) -> dict[str, Any] | None:
        """The notification to send for a wanted ``event`` (``None``: nothing)."""
        ...


class ServerCore:
    """The parts of a server its method handlers share (one per app)."""

    __slots__ = ("_caps", "_legacy_caps", "closing", "declared", "dependency_overrides", "extensions", "instructions",
                 "listen_topics", "notifier", "registry", "sealer", "server_info", "sessions", "settings", "streams",
                 "tasks", "telemetry")

    def __init__(self, *, registry: Registry, settings: Settings, notifier: Notifier,
                 server_info: dict[str, Any], instructions: str | None = None,
                 sessions: SessionStore | None = None, sealer: RequestStateSealer | None = None,
                 extensions: dict[str, dict[str, Any]] | None = None) -> None:
        self.registry = registry
        self.settings = settings
        self.notifier = notifier
        self.server_info = server_info
        self.instructions = instructions
        self.sessions = sessions
        self.sealer = sealer
        self.telemetry: Telemetry | None = None
        self.closing = Closing()
        self.extensions: dict[str, dict[str, Any]] = dict(extensions or {})
        self.declared: set[str] = set()
        """Kinds served before anything of them is registered (see :meth:`declare`)."""
        """Extensions this server declares under ``capabilities.extensions`` (id -> settings)."""
        self._caps: tuple[int, dict[str, Any]] | None = None
        self.dependency_overrides = DependencyOverrides()
        """Dependencies replaced app-wide (``app.dependency_overrides``)."""
        self._legacy_caps: tuple[int, dict[str, Any]] | None = None
        self.tasks: TaskCalls | None = None
        """Runs the tools declared with ``task=`` as tasks (``None``: they run as ordinary calls)."""
        self.listen_topics: list[ListenTopic] = []
        """What ``subscriptions/listen`` may carry beyond list changes and resource updates."""
        notifier.may_read = lambda uri, req: may_see_uri(self, uri, req)
        self.streams = CallerStreams(settings.streams_per_caller())
        """The long-lived streams each caller holds open here (listen, GET and HTTP+SSE streams)."""

    def capabilities(self) -> dict[str, Any]:
        """Server capabilities that match what is registered."""
        cached = self._caps
        if cached is not None and cached[0] == self.registry.version:
            return cached[1]
        caps = self._capabilities()
        self._caps = (self.registry.version, caps)
        return caps

    def _capabilities(self) -> dict[str, Any]:
        r = self.registry
        caps: dict[str, Any] = {"logging": {}}
        declared = self.declared
        if r.prompts or r.templates or "prompts" in declared or "resources" in declared:
            caps["completions"] = {}
        if r.prompts or "prompts" in declared:
            caps["prompts"] = {"listChanged": True}
        if r.resources or r.templates or "resources" in declared:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if r.tools or "tools" in declared:
            caps["tools"] = {"listChanged": True}
        extensions = dict(self.extensions)
        if APPS not in extensions and any(t.app is not None for t in r.tools.values()):
            extensions[APPS] = {"mimeTypes": [APP_MIME_TYPE]}
        if self.tasks is not None and TASKS not in extensions and any(t.task is not None for t in r.tools.values()):
            extensions[TASKS] = {}
        if extensions:
            caps["extensions"] = extensions
        return caps

    def legacy_capabilities(self) -> dict[str, Any]:
        """The capabilities a 2025-era ``initialize`` answers: tasks are the core ``tasks``
        capability there (2025-11-25), not the extension."""
        cached = self._legacy_caps
        if cached is not None and cached[0] == self.registry.version and self._caps is not None:
            return cached[1]
        caps = self.capabilities()
        if TASKS in caps.get("extensions", {}) and TASKS not in self.extensions:
            caps = {**caps, "tasks": _LEGACY_TASKS}
            others = {k: v for k, v in caps["extensions"].items() if k != TASKS}
            if others:
                caps["extensions"] = others
            else:
                del caps["extensions"]
        self._legacy_caps = (self.registry.version, caps)
        return caps

    def declare_extension(self, ext_id: str, settings: dict[str, Any]) -> None:
        """Add ``ext_id`` to the capabilities this server declares."""
        self.extensions[ext_id] = settings
        self._caps = self._legacy_caps = None

    def declare(self, kind: str) -> None:
        """Declare ``kind`` (``tools``, ``prompts``, ``resources``) served even while nothing of it
        is registered (a proxy whose lists are each caller's own fills them when a caller asks)."""
        self.declared.add(kind)
        self._caps = self._legacy_caps = None

    def forget_capabilities(self) -> None:
        """Recompute the capabilities on next use (a method or gate was added)."""
        self._caps = self._legacy_caps = None

    async def save_session(self, session: SessionRecord) -> None:
        """Store a 2025-era session a handler changed (no-op without a session store)."""
        if self.sessions is not None:
            await self.sessions.save(session)

    def check_scopes(self, required: Sequence[str], req: Inbound) -> None:
        """Fail closed when a definition requires scopes the caller does not hold (checked
        before its input is parsed); the client is never told which scopes were missing."""
        if not required:
            return
        try:
            check_scopes(req.auth, required, auth_mode=self.settings.auth_mode,
                         disabled=self.settings.auth_disable_scope_checks)
        except McpError as exc:
            raise McpError(exc.code, exc.message, {"reason": "insufficient_scope"}) from None


Handler = Callable[[ServerCore, dict[str, Any], Inbound], Awaitable[dict[str, Any]]]
"""A method handler: the server core, the request's ``params`` and its :class:`Inbound`; returns
the method's result object."""
