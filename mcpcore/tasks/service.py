"""The tasks of one app: the store, the attempts running here, the lease watcher, the bus.

:class:`~mcpcore.tasks.Tasks` plugs them into an app: ``tools/call`` of a tool declared ``task=`` goes
through :meth:`TaskService.call`; the ``tasks/*`` methods, the listen topic and the extension's
declaration are registered; status changes travel on the app's bus, so every instance's listen
streams, 2025 sessions and waiting ``tasks/result`` calls hear of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import TYPE_CHECKING, Any

from .. import _json
from ..context import ContextServices, Inbound
from ..definitions.tools import ToolDefinition
from ..errors import ConfigurationError, JsonRpcErrorCode, McpError
from ..protocol.versions import Era
from .base import Claim, TaskStore
from .execution import Executions, failure
from .record import TaskMeta, TaskState, auth_dict, new_task_id, now_ms, owner_of, quota_of
from .watcher import LeaseWatcher

if TYPE_CHECKING:
    from ..config import Settings
    from ..server.core import ServerCore

__all__ = ["MAX_RERUNS", "TaskService"]

log = logging.getLogger("mcpcore.tasks")

MAX_RERUNS = 3
"""Times a task is run again after losing its instance before it is failed (a task that kills
every instance it runs on must not go round forever)."""


class TaskService:
    """Creates tasks, runs them here, takes over those of dead instances, and answers for any."""

    def __init__(self, core: ServerCore, store: TaskStore, services: ContextServices) -> None:
        self.core = core
        settings = core.settings
        self.store = store
        self.holder = secrets.token_hex(8)
        self.lease_ms = settings.tasks_lease_ms
        _check_bounds(settings)
        self.executions = Executions(core, store, services, holder=self.holder, lease_ms=self.lease_ms,
                                     max_rounds=settings.max_input_rounds, publish=self.publish,
                                     max_task_bytes=settings.tasks_max_task_bytes)
        self.watcher = LeaseWatcher(store, self.holder, self.lease_ms, self.recover, self.executions.attempts) \
            if store.shared else None
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._unsubscribe: Any = None

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen to the bus and, with a shared store, watch the leases (once the app serves a
        task tool: an app without one never touches the task store)."""
        bus = self.core.notifier.bus
        self._unsubscribe = bus.subscribe(self._on_event)
        on_reset = getattr(bus, "on_reset", None)
        if on_reset is not None and self.watcher is not None:
            on_reset(self.watcher.nudge)
        if any(t.task is not None for t in self.core.registry.tools.values()):
            self._watch()

    def _watch(self) -> None:
        if self.watcher is not None and not self.watcher.started:
            self.watcher.start()

    async def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.watcher is not None:
            await self.watcher.close()
        await self.executions.close()
        await self.store.close()

    # -- the bus ----------------------------------------------------------------------------------

    def publish(self, event: dict[str, Any]) -> None:
        """Put ``event`` on the app's bus (fire and forget)."""
        self.core.notifier.publish({**event, "origin": None})

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("kind") != "task":
            return
        tid = event.get("id")
        if not isinstance(tid, str):
            return
        if event.get("status") == "cancelled":
            self.executions.stop(tid, "the task was cancelled")
        for waiter in self._waiters.get(tid, ()):
            waiter.set()
        if "lease" in event and self.watcher is not None:
            self.watcher.nudge()

    async def wait_change(self, task_id: str, within: float) -> None:
        """Wait until the bus reports a change of ``task_id`` (or ``within`` seconds)."""
        event = asyncio.Event()
        self._waiters.setdefault(task_id, set()).add(event)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), within)
        finally:
            waiters = self._waiters.get(task_id)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._waiters[task_id]

    # -- creating ---------------------------------------------------------------------------------

    async def create(self, tool: ToolDefinition, arguments: Any, req: Inbound, ttl_ms: int,
                     message: str | None = None) -> TaskState:
        """Store a new task for ``req``'s call of ``tool``, held by this instance; raises when a
        bound is reached. The record exists (``tasks/get`` finds it) when this returns."""
        s = self.core.settings
        if len(self.executions) >= s.tasks_max_per_instance:
            raise McpError(JsonRpcErrorCode.ServiceUnavailable,
                           f"This instance runs {s.tasks_max_per_instance} tasks already (MCP_TASKS_MAX_PER_INSTANCE); "
                           "retry shortly.", {"reason": "task_capacity", "limit": s.tasks_max_per_instance})
        self._watch()
        support = tool.task
        now = now_ms()
        modern = req.era is Era.MODERN
        quota, who = quota_of(req)
        meta = TaskMeta(
            task_id=new_task_id(), owner=owner_of(req), tool=tool.name,
            arguments=arguments if type(arguments) is dict else {}, era=req.era.value,
            protocol_version=req.protocol_version, created=now, ttl_ms=ttl_ms,
            poll_ms=(support.poll_interval_ms if support is not None else None) or s.tasks_poll_interval_ms,
            rerun=bool(support is not None and support.rerun), tenant=req.tenant_id, auth=auth_dict(req.auth),
            client_capabilities=req.client_capabilities, client_info=req.client_info,
            session_id=None if modern else req.session_id, progress_token=req.progress_token,
            log_level=req.client_log_level, inputs=req.input_responses, request_state=req.request_state,
            quota=quota)
        size = len(meta.to_json())
        if size > s.tasks_max_task_bytes:
            raise McpError(JsonRpcErrorCode.InvalidParams,
                           f"This call's arguments and request take {size} bytes; a task keeps at most "
                           f"{s.tasks_max_task_bytes} (MCP_TASKS_MAX_TASK_BYTES).",
                           {"reason": "task_too_large", "limit": s.tasks_max_task_bytes})
        st = TaskState(meta=meta, status="working", message=message, updated=now, holder=self.holder)
        admission = await self.store.create(st, lease_ms=self.lease_ms)
        if admission == "too_many":
            raise McpError(JsonRpcErrorCode.RateLimited,
                           f"The task quota of {who} is full: {s.tasks_max_per_identity} unfinished tasks "
                           "(MCP_TASKS_MAX_PER_IDENTITY); wait for one to finish or cancel one.",
                           {"reason": "too_many_tasks", "limit": s.tasks_max_per_identity, "quota": who})
        if admission == "too_large":
            raise McpError(JsonRpcErrorCode.RateLimited,
                           f"The task quota of {who} is full: its unfinished tasks leave no room for {size} more "
                           f"bytes within {s.tasks_max_bytes_per_identity} (MCP_TASKS_MAX_BYTES_PER_IDENTITY); wait "
                           "for one to finish or cancel one.",
                           {"reason": "task_bytes_full", "limit": s.tasks_max_bytes_per_identity, "quota": who})
        if message is not None:
            await self.store.note(meta.task_id, st.attempt, message)
        self.executions.changed(st, "working", now, message, lease=now + self.lease_ms)
        return st

    @staticmethod
    def created(st: TaskState, era: Era) -> dict[str, Any]:
        """The answer to the ``tools/call`` that created ``st``."""
        if era is Era.MODERN:
            return {"resultType": "task", **st.modern(detailed=False)}
        return {"task": st.legacy()}

    # -- answers and recovery ---------------------------------------------------------------------

    async def answer(self, st: TaskState, answers: dict[str, bytes]) -> None:
        """Deliver answers to ``st``'s pending questions; the last one resumes it, here."""
        limit = self.core.settings.tasks_max_task_bytes
        size = len(st.meta.to_json()) + sum(map(len, st.answers.values())) + sum(map(len, answers.values()))
        if size > limit:
            raise McpError(JsonRpcErrorCode.InvalidParams,
                           f"These answers would make the task take {size} bytes; a task keeps at most {limit} "
                           "(MCP_TASKS_MAX_TASK_BYTES).", {"reason": "task_too_large", "limit": limit})
        attempt = await self.store.answer(st.task_id, answers, self.holder, self.lease_ms)
        if attempt is None:
            return
        fresh = await self.store.get(st.task_id)
        if fresh is None or fresh.attempt != attempt or fresh.status != "working":
            return
        now = now_ms()
        self.executions.changed(fresh, "working", now, fresh.message, lease=now + self.lease_ms)
        self._run(fresh)

    def _run(self, st: TaskState) -> None:
        tool = self.core.registry.tools.get(st.meta.tool)
        if tool is None or tool.task is None:
            self.executions.spawn(self._fail(st, f"The tool {st.meta.tool!r} is no longer served here.",
                                              "tool_gone"))
            return
        self.executions.launch(st, tool)

    async def _fail(self, st: TaskState, message: str, reason: str) -> None:
        body = failure(JsonRpcErrorCode.InternalError, message, reason)
        if await self.store.finish(st.task_id, st.attempt, "failed", body, message):
            self.executions.changed(st, "failed", now_ms(), message, body)

    async def recover(self, claim: Claim) -> None:
        """This instance took over ``claim`` (its instance died): run it again when the tool is
        safe to re-run, else fail it with the reason."""
        task_id, attempt = claim
        st = await self.store.get(task_id)
        if st is None or st.status != "working" or st.attempt != attempt:
            return
        tool = self.core.registry.tools.get(st.meta.tool)
        reruns = attempt - 1 - st.round
        if tool is None or tool.task is None or not tool.task.rerun:
            await self._fail(st, "The instance running this task stopped before it finished, and the tool is not "
                                 "declared safe to run again (TaskSupport(rerun=True)).", "instance_lost")
        elif reruns > MAX_RERUNS:
            await self._fail(st, f"The task lost its instance {reruns} times; it is not run again.", "instance_lost")
        else:
            log.info("running task %s again (attempt %d): its instance stopped", task_id[:8], attempt)
            now = now_ms()
            self.executions.changed(st, "working", now, st.message, lease=now + self.lease_ms)
            self.executions.launch(st, tool)

    # -- reading ----------------------------------------------------------------------------------

    async def owned(self, task_id: Any, req: Inbound) -> TaskState:
        """The caller's task ``task_id``; another caller's reads as unknown (``-32602``)."""
        if type(task_id) is not str or not task_id or len(task_id) > 200:
            raise McpError(JsonRpcErrorCode.InvalidParams, '"taskId" must be a task id (a string).')
        st = await self.store.get(task_id)
        if st is None or st.meta.owner != owner_of(req):
            raise McpError(JsonRpcErrorCode.InvalidParams, "Failed to retrieve task: Task not found",
                           {"reason": "task_not_found"})
        return st

    @staticmethod
    def outcome(st: TaskState) -> Any:
        """The stored result or error of a finished task, parsed."""
        return _json.loads(st.outcome) if st.outcome else None


def _check_bounds(s: Settings) -> None:
    if s.tasks_max_kept_per_identity < s.tasks_max_per_identity:
        raise ConfigurationError(
            f"MCP_TASKS_MAX_KEPT_PER_IDENTITY ({s.tasks_max_kept_per_identity}) must be at least "
            f"MCP_TASKS_MAX_PER_IDENTITY ({s.tasks_max_per_identity}): the tasks kept include the unfinished ones")
    if s.tasks_max_bytes_per_identity < s.tasks_max_task_bytes:
        raise ConfigurationError(
            f"MCP_TASKS_MAX_BYTES_PER_IDENTITY ({s.tasks_max_bytes_per_identity}) must be at least "
            f"MCP_TASKS_MAX_TASK_BYTES ({s.tasks_max_task_bytes}): one task must fit in an identity's bytes")
