"""Running tasks in this process: each attempt in its own asyncio task, its ending written to the
store, the leases of everything running here renewed while anything runs (and only then).

An attempt holds the task's lease. Losing it (the task was cancelled, or another instance took
it over after this one stalled past its lease) stops the attempt: ``ctx.signal`` fires and the
handler's asyncio task is cancelled; whatever it returns afterwards is refused by the store.

How an attempt ended is written until the store takes it: while the store is unreachable the
write is tried again, and the attempt stays here with its lease renewed, so a run that finished
is never reported lost, and a tool that must not run twice is not run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .. import _json
from ..context import Inbound
from ..definitions.tools import ToolDefinition
from ..errors import JsonRpcErrorCode, McpError, error_object
from ..protocol.versions import Era
from .attempt import Outcome, run_attempt, validate_arguments
from .base import TaskStore
from .record import RELATED_TASK, TaskMeta, TaskState, now_ms, wire_key

if TYPE_CHECKING:
    from ..context import ContextServices
    from ..server.core import ServerCore

__all__ = ["Executions", "RunningTask", "TaskOutbound", "failure", "store_unreachable"]

log = logging.getLogger("mcpcore.tasks")

T = TypeVar("T")

_RETRY_FIRST_S = 0.1
_RETRY_MAX_S = 2.0
_WARN_EVERY_S = 10.0


def store_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the task store could not be reached (a write worth trying again)."""
    if isinstance(exc, McpError):
        return exc.code == JsonRpcErrorCode.ServiceUnavailable
    return isinstance(exc, (OSError, TimeoutError))


def failure(code: int, message: str, reason: str) -> bytes:
    """The JSON of a failed task's ``error``."""
    return _json.dumps(error_object(code, message, {"reason": reason}))


class RunningTask:
    """``req.task`` of an attempt: the handler runs as this task already."""

    __slots__ = ("task_id",)

    def __init__(self, task_id: str) -> None:
        self.task_id: str | None = task_id

    async def start(self, message: str | None = None) -> None:
        return None


class TaskOutbound:
    """Where a task's notifications go: a progress message becomes the ``statusMessage`` (an
    attempt always has a progress token, so ``ctx.report_progress`` always reaches here); on a
    2025-era session, log lines and (when the client sent a token) progress also reach the
    session's stream, tagged with the task, through the bus, whichever instance holds it."""

    def __init__(self, executions: Executions, meta: TaskMeta, attempt: int) -> None:
        self._x = executions
        self._meta = meta
        self._attempt = attempt

    def post(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if message.get("method") == "notifications/progress" and isinstance(params, dict):
            if isinstance(params.get("message"), str):
                self._x.note(self._meta.task_id, self._attempt, params["message"])
            if self._meta.progress_token is None:  # the client asked for no progress notifications
                return
        sid = self._meta.session_id
        if sid is not None and isinstance(params, dict):
            meta = {**params.get("_meta", {}), RELATED_TASK: {"taskId": self._meta.task_id}}
            self._x.publish({"kind": "note", "to": sid, "note": {**message, "params": {**params, "_meta": meta}}})

    async def drain(self) -> None:
        return None

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        raise McpError(JsonRpcErrorCode.InvalidRequest, "A task asks the client with ctx.request_input.")


@dataclass(slots=True, eq=False)
class _Running:
    attempt: int
    task: asyncio.Task[None]
    req: Inbound


class Executions:
    """The attempts running in this process, and their leases."""

    def __init__(self, core: ServerCore, store: TaskStore, services: ContextServices, *, holder: str,
                 lease_ms: int, max_rounds: int, publish: Callable[[dict[str, Any]], None],
                 max_task_bytes: int = 4 * 2**20) -> None:
        self.core = core
        self.store = store
        self.services = services
        self.holder = holder
        self.lease_ms = lease_ms
        self.max_rounds = max_rounds
        self.max_task_bytes = max_task_bytes
        self.publish = publish
        self.running: dict[str, _Running] = {}
        self._renewer: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self.running)

    def attempts(self) -> dict[str, int]:
        """What runs here: task id -> attempt (the lease watcher never takes these over)."""
        return {tid: r.attempt for tid, r in self.running.items()}

    # -- an attempt's Inbound ---------------------------------------------------------------------

    def inbound(self, st: TaskState) -> Inbound:
        """The request an attempt of ``st`` runs as: the creator's identity and client, the
        answers of the last round (or those the creating call carried)."""
        m = st.meta
        first = st.round == 0
        req = Inbound("tools/call", None, Era(m.era), self.services, auth=m.auth_info(), tenant_id=m.tenant,
                      protocol_version=m.protocol_version, client_capabilities=m.client_capabilities,
                      client_info=m.client_info, session_id=m.session_id,
                      progress_token=m.progress_token if m.progress_token is not None else m.task_id,
                      client_log_level=m.log_level, transport="task",
                      input_responses=m.inputs if first else st.handler_inputs(),
                      request_state=m.request_state if first else st.state)
        req.outbound = TaskOutbound(self, m, st.attempt)
        req.task = RunningTask(m.task_id)
        return req

    # -- running ----------------------------------------------------------------------------------

    def launch(self, st: TaskState, tool: ToolDefinition, validated: Any = None) -> None:
        """Run attempt ``st.attempt`` of ``st`` here (this process holds its lease)."""
        req = self.inbound(st)
        if validated is None:
            try:
                validated = validate_arguments(tool, st.meta.arguments)
            except McpError as exc:
                self.spawn(self.settle(st, Outcome("protocol", error=exc)))
                return
        task = asyncio.get_running_loop().create_task(self._drive(st, run_attempt(self.core, tool, validated, req)))
        self.adopt(st, task, req)

    def adopt(self, st: TaskState, task: asyncio.Task[Any], req: Inbound) -> None:
        """Track ``task`` (an attempt of ``st`` already running) until it ends."""
        self.running[st.task_id] = _Running(st.attempt, task, req)
        task.add_done_callback(functools.partial(self._ended, st.task_id))
        if self.store.shared and self._renewer is None:
            self._renewer = asyncio.get_running_loop().create_task(self._renew())

    def _ended(self, task_id: str, task: asyncio.Future[Any]) -> None:
        entry = self.running.get(task_id)
        if entry is not None and entry.task is task:
            del self.running[task_id]
        if not task.cancelled() and task.exception() is not None:
            log.error("a task's attempt failed outside its handler", exc_info=task.exception())

    async def _drive(self, st: TaskState, attempt: Any) -> None:
        outcome = await attempt
        await self.settle(st, outcome)

    async def settle(self, st: TaskState, outcome: Outcome) -> None:
        """Write how attempt ``st.attempt`` ended (refused by the store if it no longer holds it),
        trying again while the store is unreachable."""
        tid, n = st.task_id, st.attempt
        now = now_ms()
        spec = outcome.spec
        if outcome.kind == "input" and spec is not None:
            nxt = st.round + 1
            if nxt > self.max_rounds:
                outcome = Outcome("protocol", error=McpError(
                    JsonRpcErrorCode.InternalError, f"The task asked the client for input more than {self.max_rounds} "
                    "times.", {"reason": "too_many_input_rounds"}))
            else:
                asks = {wire_key(k, nxt): _json.dumps(r.to_wire()) for k, r in spec.input_requests.items()}
                if await self.until_stored(tid, "questions", lambda: self.store.park(
                        tid, n, asks, spec.request_state, "Waiting for input")):
                    self.changed(st, "input_required", now, "Waiting for input")
                return
        if outcome.kind == "result" and outcome.result is not None:
            status, body, message = "completed", _json.dumps(outcome.result), None
        else:
            err = outcome.error or McpError(JsonRpcErrorCode.InternalError)
            if outcome.kind == "crash":
                err = McpError(JsonRpcErrorCode.InternalError, "The task failed: " + err.message,
                               {"reason": "task_crashed"})
            status, body, message = "failed", _json.dumps(error_object(err.code, err.message, err.data)), err.message
        room = self.max_task_bytes - len(st.meta.to_json())
        if len(body) > room:
            message = (f"The task's {'result' if status == 'completed' else 'error'} takes {len(body)} bytes; a task "
                       f"keeps at most {self.max_task_bytes} with its arguments (MCP_TASKS_MAX_TASK_BYTES).")
            log.warning("task %s of %s: %s", tid[:8], st.meta.tool, message)
            status, body = "failed", failure(JsonRpcErrorCode.InternalError, message, "task_result_too_large")
        if await self.until_stored(tid, status, lambda: self.store.finish(tid, n, status, body, message)):
            self.changed(st, status, now, message, body)

    async def until_stored(self, task_id: str, what: str, write: Callable[[], Awaitable[T]]) -> T:
        """Run the store ``write`` until the store takes it (or the attempt is stopped: its lease
        was lost, or the server is stopping)."""
        delay = _RETRY_FIRST_S
        warned = 0.0
        since = time.monotonic()
        while True:
            try:
                done = await write()
            except asyncio.CancelledError:
                if warned:
                    log.error("task %s: its ending (%s) was not written: the store stayed unreachable for %.1f s "
                              "and the attempt was stopped", task_id[:8], what, time.monotonic() - since)
                raise
            except Exception as exc:
                if not store_unreachable(exc):
                    raise
                if time.monotonic() - warned >= _WARN_EVERY_S:
                    warned = time.monotonic()
                    log.warning("task %s: the store is unreachable (%s); writing its ending (%s) again until it is "
                                "back, the lease kept meanwhile", task_id[:8], getattr(exc, "message", exc), what)
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX_S)
                continue
            if warned:
                log.warning("task %s: its ending (%s) was written after %.1f s", task_id[:8], what,
                            time.monotonic() - since)
            return done

    def changed(self, st: TaskState, status: str, now: int, message: str | None, outcome: bytes | None = None,
                lease: int | None = None) -> None:
        """Announce a change of ``st`` (bus: listen streams, 2025 sessions, waiters and lease
        watchers everywhere; ``lease``: the deadline of a lease just taken)."""
        after = TaskState(meta=st.meta, status=status, message=message, updated=now, outcome=outcome)
        event: dict[str, Any] = {"kind": "task", "id": st.task_id, "status": status, "owner": st.meta.owner,
                                 "tenant": st.meta.tenant or ""}
        if lease is not None:
            event["lease"] = lease
        if st.meta.session_id is not None:
            event["to"] = st.meta.session_id
            event["note"] = {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": after.legacy()}
        self.publish(event)

    def note(self, task_id: str, attempt: int, message: str) -> None:
        """Set the running task's ``statusMessage`` (fire and forget)."""
        self.spawn(self.store.note(task_id, attempt, message[:1000]))

    def spawn(self, coro: Any) -> None:
        """Run ``coro`` in the background, kept until it ends."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._spawned)

    def _spawned(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            if store_unreachable(exc):
                log.info("a task's status message was not written: %s", getattr(exc, "message", exc))
            else:
                log.error("a task's background write failed", exc_info=exc)

    # -- stopping ---------------------------------------------------------------------------------

    def stop(self, task_id: str, reason: str) -> None:
        """Stop the attempt of ``task_id`` running here, if any: ``ctx.signal`` fires, its task is
        cancelled."""
        entry = self.running.pop(task_id, None)
        if entry is None:
            return
        entry.req.signal.abort(reason)
        entry.task.cancel()

    async def _renew(self) -> None:
        interval = self.lease_ms / 3000
        delay = interval
        failing_since: float | None = None
        try:
            while self.running:
                await asyncio.sleep(delay)
                held = self.attempts()
                if not held:
                    break
                try:
                    lost = await self.store.renew(held, self.holder, self.lease_ms)
                except Exception as exc:
                    if failing_since is None:
                        failing_since = time.monotonic()
                        log.warning("could not renew the leases of %d task(s): %s; trying again", len(held),
                                    getattr(exc, "message", exc))
                    delay = min(interval, 0.5)  # renew as soon as the store is back
                    continue
                if failing_since is not None:
                    log.warning("task leases renewed again after %.1f s", time.monotonic() - failing_since)
                    failing_since = None
                delay = interval
                for tid in lost:
                    self.stop(tid, "the task was cancelled or taken over")
        finally:
            self._renewer = None

    async def close(self) -> None:
        """Shutting down: stop every attempt here and let its lease lapse now, so another instance
        takes it over at once (a shared store) instead of after the lease."""
        if self._renewer is not None:
            self._renewer.cancel()
        held = list(self.running.items())
        for tid, _entry in held:
            self.stop(tid, "the server is shutting down")
        for tid, entry in held:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(entry.task), 1)
            if self.store.shared:
                with contextlib.suppress(Exception):
                    await self.store.release(tid, self.holder, entry.attempt)
        for t in list(self._background):
            t.cancel()
