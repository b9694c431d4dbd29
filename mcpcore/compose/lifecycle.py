"""Starting and stopping a parent's proxies with it, and the requests they take before the
parent's own handling: a caller's own lists of a backend reached with its credential, and
``tasks/*`` of a backend's task."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import JsonRpcErrorCode, McpError
from ..middleware.base import Call, CallNext, Middleware
from .names import Namespace
from .views import CallerViews

if TYPE_CHECKING:
    from ..config import Settings
    from ..context import Inbound

__all__ = ["MountedAt", "ProxyLifecycle", "Served", "cancelled_yet"]

_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel", "tasks/result"})
_LIST_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
_VIEW_METHODS = _LIST_METHODS | {"tools/call", "prompts/get", "resources/read", "completion/complete"}


def cancelled_yet() -> None:
    """Raise the running task's cancellation when a call it made turned it into an error or a result
    (a proxy's listener must end when the proxy stops, whatever the backend's client did)."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


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
    task (its id starts with ``proxy:<namespace>:``) to that backend (both eras); a 2025 caller's
    ``tasks/list`` pages through the parent's own tasks, then each backend's."""

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
        if call.method == "tasks/list" and call._req is not None and self.proxies:
            return await self._list(call, call_next)
        if call.method not in _TASK_METHODS:
            return await call_next(call)
        task_id = call.params.get("taskId")
        if not isinstance(task_id, str):
            return await call_next(call)
        for p in self.proxies:
            if task_id.startswith(p.task_prefix):
                return await p.call(call.method, {**call.params, "taskId": task_id[len(p.task_prefix):]}, call._req)
        return await call_next(call)

    async def _list(self, call: Call, call_next: CallNext) -> Any:
        """The parent's own pages, then each backend's (its tasks' ids and its cursors prefixed
        ``proxy:<namespace>:``); a backend without ``tasks/list`` lists none."""
        cursor = call.params.get("cursor")
        tasks: list[Any] = []
        at: int | None = 0
        rest: str | None = None
        if not (isinstance(cursor, str) and cursor.startswith("proxy:")):
            own = await call_next(call)
            if own.get("nextCursor") is not None:
                return own
            tasks = list(own.get("tasks") or [])
        else:
            at = next((i for i, p in enumerate(self.proxies) if cursor.startswith(p.task_prefix)), None)
            if at is None:
                raise McpError(JsonRpcErrorCode.InvalidParams, "Invalid cursor.", {"reason": "invalid_cursor"})
            rest = cursor[len(self.proxies[at].task_prefix):] or None
        for p in self.proxies[at or 0:]:
            try:
                page = await p.call("tasks/list", {"cursor": rest} if rest else {}, call._req)
            except McpError as exc:
                if exc.code not in (JsonRpcErrorCode.MethodNotFound, JsonRpcErrorCode.InvalidParams):
                    raise
                page = {}
            tasks += [t for t in page.get("tasks") or [] if isinstance(t, dict)]
            rest = None
            if isinstance(page.get("nextCursor"), str):
                return {"tasks": tasks, "nextCursor": p.task_prefix + page["nextCursor"]}
        return {"tasks": tasks}
