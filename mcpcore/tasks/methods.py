"""The ``tasks/*`` methods, on any instance, for the caller's own tasks only.

2026-07-28 (``io.modelcontextprotocol/tasks``; a request that did not declare it is refused with
``-32021``): ``tasks/get`` (the task, its result, error or pending ``inputRequests`` inlined),
``tasks/update`` (answers; an empty acknowledgement) and ``tasks/cancel`` (an empty
acknowledgement, also for a finished task).

2025-11-25: ``tasks/get``, ``tasks/list``, ``tasks/cancel`` (the cancelled task; ``-32602`` for a
finished one) and ``tasks/result``, which waits for the end, asking the client on its own
stream whatever the task asks meanwhile, and answers exactly what the call would have.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .. import _json
from ..context import Inbound
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.extensions import TASKS, client_extension
from ..protocol.versions import Era
from .calls import missing_extension
from .record import ACTIVE, RELATED_TASK, TaskState, bound, now_ms, owner_of

if TYPE_CHECKING:
    from ..extensions.seam import Seam
    from ..server.core import ServerCore
    from .service import TaskService

__all__ = ["register"]

_WAIT_S = 5.0  # tasks/result re-reads the task this often even if the bus said nothing


def _gate(req: Inbound, method: str) -> None:
    if req.era is Era.MODERN and client_extension(req.client_capabilities, TASKS) is None:
        raise missing_extension(method)


class TaskMethods:
    """The handlers, bound to the app's :class:`~mcpcore.tasks.service.TaskService`."""

    def __init__(self, svc: TaskService) -> None:
        self.svc = svc

    async def get(self, core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        _gate(req, "tasks/get")
        st = await self.svc.owned(params.get("taskId"), req)
        return st.modern() if req.era is Era.MODERN else st.legacy()

    async def update(self, core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        _gate(req, "tasks/update")
        responses = params.get("inputResponses")
        if type(responses) is not dict:
            raise McpError(JsonRpcErrorCode.InvalidParams, '"inputResponses" must be an object.')
        st = await self.svc.owned(params.get("taskId"), req)
        if st.status == "input_required":
            answers = {k: _json.dumps(v) for k, v in responses.items() if k in st.asks and type(v) is dict}
            if answers:
                await self.svc.answer(st, answers)
        return {}

    async def cancel(self, core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        _gate(req, "tasks/cancel")
        st = await self.svc.owned(params.get("taskId"), req)
        legacy = req.era is Era.LEGACY
        if legacy and st.terminal:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"Cannot cancel a task that is already {st.status}.",
                           {"reason": "task_finished", "status": st.status})
        message = "Cancelled by request."
        before = await self.svc.store.cancel(st.task_id, message)
        now = now_ms()
        if before in ACTIVE:
            self.svc.executions.stop(st.task_id, "the task was cancelled")
            self.svc.executions.changed(st, "cancelled", now, message)
        if not legacy:
            return {}
        after = await self.svc.store.get(st.task_id) or TaskState(meta=st.meta, status="cancelled", message=message,
                                                                  updated=now)
        return after.legacy()

    async def list(self, core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        if not bound(req):  # an anonymous caller without a session: every such caller is one owner
            return {"tasks": []}
        cursor = params.get("cursor")
        offset = 0
        if cursor is not None:
            if type(cursor) is not str or not cursor.isdigit() or len(cursor) > 9:
                raise McpError(JsonRpcErrorCode.InvalidParams, "Invalid cursor.", {"reason": "invalid_cursor"})
            offset = int(cursor)
        items, nxt = await self.svc.store.page(owner_of(req), offset, core.settings.list_page_size)
        out: dict[str, Any] = {"tasks": [st.legacy() for st in items]}
        if nxt is not None:
            out["nextCursor"] = str(nxt)
        return out

    async def result(self, core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        task_id = params.get("taskId")
        st = await self.svc.owned(task_id, req)
        if st.terminal:
            return self._payload(st)
        # A server that starts draining ends the wait now, with an answer to ask again (elsewhere),
        # rather than leaving it to be cut off when the graceful shutdown gives up.
        waiting = asyncio.ensure_future(self._until_end(st, task_id, req))
        draining = asyncio.Event()
        stop = core.closing.add_listener(draining.set)
        drained = asyncio.ensure_future(draining.wait())
        try:
            await asyncio.wait({waiting, drained}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop()
            drained.cancel()
            if not waiting.done():
                waiting.cancel()
                await asyncio.wait({waiting})
        if waiting.cancelled():
            raise McpError(JsonRpcErrorCode.ServiceUnavailable, "The server is shutting down; call tasks/result "
                           "again.", {"reason": "shutting_down", "taskId": st.task_id})
        return waiting.result()

    async def _until_end(self, st: TaskState, task_id: Any, req: Inbound) -> dict[str, Any]:
        while not st.terminal:
            if st.status == "input_required" and st.asks:
                await self.svc.answer(st, await self._ask(st, req))
            else:
                await self.svc.wait_change(st.task_id, _WAIT_S)
            st = await self.svc.owned(task_id, req)
        return self._payload(st)

    async def _ask(self, st: TaskState, req: Inbound) -> dict[str, bytes]:
        """Send the task's pending questions to the client on this request's stream."""
        related = {RELATED_TASK: {"taskId": st.task_id}}

        async def one(key: str, raw: bytes) -> tuple[str, bytes]:
            wanted = _json.loads(raw)
            params = dict(wanted.get("params") or {})
            params["_meta"] = {**params.get("_meta", {}), **related}
            return key, _json.dumps(await req.outbound.request(wanted["method"], params))

        return dict(await asyncio.gather(*(one(k, v) for k, v in st.asks.items())))

    @staticmethod
    def _payload(st: TaskState) -> dict[str, Any]:
        outcome = _json.loads(st.outcome) if st.outcome else None
        if st.status == "completed" and isinstance(outcome, dict):
            outcome["_meta"] = {**outcome.get("_meta", {}), RELATED_TASK: {"taskId": st.task_id}}
            return outcome
        if st.status == "failed" and isinstance(outcome, dict):
            raise McpError(int(outcome.get("code", JsonRpcErrorCode.InternalError)), str(outcome.get("message", "")),
                           outcome.get("data"))
        raise McpError(JsonRpcErrorCode.InvalidRequest, "The task was cancelled; it has no result.",
                       {"reason": "task_cancelled"})


def register(seam: Seam, svc: TaskService) -> None:
    """Serve the ``tasks/*`` methods of both eras through ``seam``."""
    m = TaskMethods(svc)
    seam.add_method("tasks/get", m.get, gate="tools")
    seam.add_method("tasks/cancel", m.cancel, gate="tools")
    seam.add_method("tasks/update", m.update, gate="tools", era=Era.MODERN)
    seam.add_method("tasks/list", m.list, gate="tools", era=Era.LEGACY)
    seam.add_method("tasks/result", m.result, gate="tools", era=Era.LEGACY)
