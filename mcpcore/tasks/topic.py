"""``notifications/tasks`` on ``subscriptions/listen`` (2026-07-28): the client lists the task ids
it wants to hear about (``notifications.taskIds``); the server agrees to those that are the
caller's, and sends each change as the ``DetailedTask`` ``tasks/get`` would answer then."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..bus.base import BusEvent
from ..context import Inbound
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.extensions import TASKS, client_extension
from .calls import missing_extension
from .record import owner_of

if TYPE_CHECKING:
    from ..server.core import ServerCore
    from .service import TaskService

__all__ = ["TaskTopic"]


class TaskTopic:
    """The tasks' :class:`~mcpcore.server.listen.ListenTopic`."""

    def __init__(self, svc: TaskService) -> None:
        self.svc = svc

    async def honor(self, core: ServerCore, requested: dict[str, Any], req: Inbound) -> dict[str, Any]:
        ids = requested.get("taskIds")
        if ids is None:
            return {}
        if type(ids) is not list or not all(type(i) is str for i in ids):
            raise McpError(JsonRpcErrorCode.InvalidParams, '"taskIds" must be a list of task ids.')
        if client_extension(req.client_capabilities, TASKS) is None:
            raise missing_extension("Listening to tasks")
        cap = core.settings.max_subscriptions
        if len(ids) > cap:
            raise McpError(JsonRpcErrorCode.InvalidParams, f'"taskIds" holds at most {cap} ids.',
                           {"reason": "too_many_subscriptions"})
        owner = owner_of(req)
        kept = []
        for task_id in dict.fromkeys(ids):
            st = await self.svc.store.get(task_id) if len(task_id) <= 200 else None
            if st is not None and st.meta.owner == owner:
                kept.append(task_id)
        return {"taskIds": kept}

    def wants(self, event: BusEvent, honored: dict[str, Any]) -> bool:
        return event.get("kind") == "task" and event.get("id") in honored.get("taskIds", ())

    async def notification(self, event: BusEvent, honored: dict[str, Any], req: Inbound) -> dict[str, Any] | None:
        st = await self.svc.store.get(str(event["id"]))
        if st is None or st.meta.owner != owner_of(req):
            return None
        return {"jsonrpc": "2.0", "method": "notifications/tasks", "params": st.modern()}
