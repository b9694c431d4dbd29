"""Starting and stopping a parent's proxies with it, and the requests they take before the
parent's own handling: a caller's own lists of a backend reached with its credential, and
``tasks/*`` of a backend's task."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..middleware.base import Call, CallNext, Middleware
from .names import Namespace
from .views import CallerViews

if TYPE_CHECKING:
    from ..config import Settings
    from ..context import Inbound

__all__ = ["MountedAt", "ProxyLifecycle", "Served"]

_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
_LIST_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
_VIEW_METHODS = _LIST_METHODS | {"tools/call", "prompts/get", "resources/read", "completion/complete"}


class MountedAt(Protocol):
    """What a proxy reads of the mount serving it (a :class:`~mcpcore.compose.Mount`)."""

    ns: Namespace
    held: dict[str, list[str]] | None


class Served(Protocol):
    """What the lifecycle needs of a proxy (a :class:`~mcpcore.compose.Proxy`)."""

    views: CallerViews | None

    @property
    def task_prefix(self) -> str: ...

    async def start(self, settings: Settings) -> None: ...

    async def stop(self) -> None: ...

    async def call(self, method: str, params: dict[str, Any], req: Inbound | None, *, tool: bool = False,
                   ) -> dict[str, Any]: ...


class ProxyLifecycle(Middleware):
    """Starts and stops a parent's proxies with the parent, and hands ``tasks/*`` of a backend's
    task (its id starts with ``proxy:<namespace>:``) to that backend (2026-07-28)."""

    name = "proxies"

    def __init__(self) -> None:
        self.proxies: list[Served] = []

    async def startup(self, settings: Settings, redis: Any = None) -> None:
        for p in self.proxies:
            await p.start(settings)

    async def shutdown(self) -> None:
        for p in reversed(self.proxies):
            await p.stop()

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        if call.method in _VIEW_METHODS and call._req is not None:
            for p in self.proxies:
                if p.views is not None:  # the caller's own lists of that backend, before its list is shaped
                    await p.views.ensure(call._req, fresh=call.method in _LIST_METHODS)
        if call.method not in _TASK_METHODS:
            return await call_next(call)
        task_id = call.params.get("taskId")
        if not isinstance(task_id, str):
            return await call_next(call)
        for p in self.proxies:
            if task_id.startswith(p.task_prefix):
                return await p.call(call.method, {**call.params, "taskId": task_id[len(p.task_prefix):]}, call._req)
        return await call_next(call)
