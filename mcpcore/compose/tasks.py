"""A backend's tasks as a proxy's callers see them, in both eras.

A backend's task keeps living in the backend; the gateway gives its id a prefix
(``proxy:<namespace>:``) and routes ``tasks/*`` carrying such an id to that backend.

A 2026-07-28 caller's task requests go as they are. A 2025-11-25 caller's (``tools/call`` with
``params.task``, then ``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel``) go as
they are to a backend spoken to in 2025 (over the caller's backend session); to a backend spoken
to in 2026-07-28 they are translated: the call declares the tasks extension, the task it creates
is answered as a ``CreateTaskResult``, ``tasks/get`` and ``tasks/cancel`` answer the 2025
``Task``, and ``tasks/result`` polls the backend's ``tasks/get`` until the end, asking the
caller the task's questions on its own stream and answering them with ``tasks/update``. Such a
backend has no ``tasks/list``: its tasks are not listed to 2025 callers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import JsonRpcErrorCode, McpError
from ..protocol.versions import Era
from .backend import Relay
from .relay import relay_to

if TYPE_CHECKING:
    from ..context import Inbound

__all__ = ["RELATED_TASK", "BackendTasks", "legacy_task", "retag"]

RELATED_TASK = "io.modelcontextprotocol/related-task"
_TERMINAL = frozenset({"completed", "failed", "cancelled"})


class Sender(Protocol):
    """What a backend's task requests go through (the proxy's backend)."""

    async def request(self, method: str, params: dict[str, Any], req: Inbound | None,
                      relay: Relay = ...) -> dict[str, Any]: ...

    async def era_of(self, req: Inbound | None = None) -> str: ...


def retag(result: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``result`` with every task id of the backend's given ``prefix``: a task's own id, a
    ``CreateTaskResult``'s, a task result's related task and ``tasks/list``'s tasks."""
    if isinstance(result.get("taskId"), str):
        result["taskId"] = prefix + result["taskId"]
    task = result.get("task")
    if isinstance(task, dict) and isinstance(task.get("taskId"), str):
        result["task"] = {**task, "taskId": prefix + task["taskId"]}
    meta = result.get("_meta")
    related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
    if isinstance(meta, dict) and isinstance(related, dict) and isinstance(related.get("taskId"), str):
        result["_meta"] = {**meta, RELATED_TASK: {**related, "taskId": prefix + related["taskId"]}}
    tasks = result.get("tasks")
    if isinstance(tasks, list):
        result["tasks"] = [{**t, "taskId": prefix + t["taskId"]} if isinstance(t, dict)
                           and isinstance(t.get("taskId"), str) else t for t in tasks]
    return result


def legacy_task(task: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 ``Task`` (or ``DetailedTask``) as the 2025-11-25 ``Task``: ``ttl`` and
    ``pollInterval``, nothing inlined; a completed task whose result is a tool error is ``failed``."""
    kept = ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt")
    out: dict[str, Any] = {k: task[k] for k in kept if k in task}
    result = task.get("result")
    if out.get("status") == "completed" and isinstance(result, dict) and result.get("isError") is True:
        out["status"] = "failed"
    if "ttlMs" in task:
        out["ttl"] = task["ttlMs"]
    if "pollIntervalMs" in task:
        out["pollInterval"] = task["pollIntervalMs"]
    return out


def _retagging(relay: Relay, prefix: str) -> Relay:
    """``relay`` with the related task of each message the backend sends given the gateway's id."""
    async def retagged(msg: dict[str, Any]) -> dict[str, Any] | None:
        params = msg.get("params")
        if isinstance(params, dict) and isinstance(params.get("_meta"), dict):
            msg = {**msg, "params": retag({**params}, prefix)}
        return await relay(msg)
    return retagged


class BackendTasks:
    """A 2025-11-25 caller's task requests to a backend spoken to in 2026-07-28, translated."""

    def __init__(self, backend: Callable[[], Sender], *, max_wait_s: float = 5.0) -> None:
        self._backend = backend
        """The proxy's backend, once started."""
        self.max_wait_s = max_wait_s

    @property
    def backend(self) -> Sender:
        return self._backend()

    async def translated(self, req: Inbound) -> bool:
        """Whether ``req``'s (a 2025 caller's) task requests are translated for this backend."""
        return req.era is Era.LEGACY and await self.backend.era_of(req) == "modern"

    async def call(self, method: str, params: dict[str, Any], req: Inbound, prefix: str) -> dict[str, Any]:
        """``method`` (``tools/call`` with a task, or ``tasks/*`` with the backend's own id) for a
        2025 caller, answered in 2025-11-25's shapes (ids still the backend's; ``prefix`` makes the
        gateway's, for the questions asked of the caller)."""
        if not await self.translated(req):  # a backend spoken to in 2025: as it is
            return await self.backend.request(method, params, req, _retagging(relay_to(req), prefix))
        if method == "tools/call":
            # params.task stays: it makes the request declare the tasks extension (2026-07-28 ignores it)
            result = await self.backend.request(method, params, req, relay_to(req))
            if result.get("resultType") == "task":
                return {"task": legacy_task(result)}
            return result  # the backend ran it as an ordinary call
        if method == "tasks/list":
            return {"tasks": []}  # 2026-07-28 lists no tasks
        task_id = params.get("taskId")
        if method == "tasks/get":
            return legacy_task(await self._get(task_id, req))
        if method == "tasks/cancel":
            task = await self._get(task_id, req)
            if task.get("status") in _TERMINAL:
                raise McpError(JsonRpcErrorCode.InvalidParams, f"Cannot cancel a task that is already "
                               f"{task.get('status')}.", {"reason": "task_finished", "status": task.get("status")})
            await self.backend.request("tasks/cancel", {"taskId": task_id}, req)
            return legacy_task(await self._get(task_id, req))
        if method == "tasks/result":
            return await self._result(task_id, req, prefix)
        raise McpError(JsonRpcErrorCode.MethodNotFound, f"{method} is not a 2025-11-25 task request")

    async def _get(self, task_id: Any, req: Inbound) -> dict[str, Any]:
        return await self.backend.request("tasks/get", {"taskId": task_id}, req)

    async def _result(self, task_id: Any, req: Inbound, prefix: str) -> dict[str, Any]:
        """Wait for the task's end (asking the caller its questions meanwhile); its result."""
        while True:
            task = await self._get(task_id, req)
            status = task.get("status")
            if status == "completed":
                result = dict(task.get("result") or {})
                result["_meta"] = {**(result.get("_meta") or {}), RELATED_TASK: {"taskId": task_id}}
                return result
            if status == "failed":
                found = task.get("error")
                err: dict[str, Any] = found if isinstance(found, dict) else {}
                raise McpError(int(err.get("code", JsonRpcErrorCode.InternalError)), str(err.get("message", "")),
                               err.get("data"))
            if status == "cancelled":
                raise McpError(JsonRpcErrorCode.InvalidRequest, "The task was cancelled; it has no result.",
                               {"reason": "task_cancelled"})
            asks = task.get("inputRequests")
            if status == "input_required" and isinstance(asks, dict) and asks:
                answers = await asyncio.gather(*(self._ask(f"{prefix}{task_id}", ask, req) for ask in asks.values()))
                await self.backend.request("tasks/update", {"taskId": task_id,
                                                            "inputResponses": dict(zip(asks, answers, strict=True))},
                                           req)
                continue
            poll = task.get("pollIntervalMs")
            await asyncio.sleep(min(max((poll if isinstance(poll, int) else 500) / 1000, 0.05), self.max_wait_s))

    @staticmethod
    async def _ask(task_id: Any, ask: Any, req: Inbound) -> dict[str, Any]:
        """One of the task's questions, asked on the caller's ``tasks/result`` stream."""
        ask = ask if isinstance(ask, dict) else {}
        params = dict(ask.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), RELATED_TASK: {"taskId": task_id}}
        answer: dict[str, Any] = await req.outbound.request(str(ask.get("method")), params)
        return answer
