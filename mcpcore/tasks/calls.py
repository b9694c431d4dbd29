"""``tools/call`` of a tool declared ``task=``: a task, or an ordinary call, per request.

2026-07-28: the server alone decides. A client that declared ``io.modelcontextprotocol/tasks``
in the request's capabilities gets a task (``resultType: "task"``); one that did not gets an
ordinary result, or ``-32021`` for a tool that runs only as a task. A legacy ``params.task`` is
ignored. 2025-11-25: the client asks with ``params.task`` (``ttl``); without it an optional tool
runs as an ordinary call and a required one is refused (``-32601``).

A tool declared ``TaskSupport(start="handler")`` (2026-07-28) runs as an ordinary call until
its handler awaits ``ctx.start_task()``: questions asked before are ``input_required`` answers on
the call itself (the client retries with the answers); from then on it is a task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ..context import Inbound
from ..definitions.tools import ToolDefinition
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.extensions import TASKS, client_extension
from ..protocol.versions import Era
from ..server.invoke import invoke, pipeline_of
from ..server.results import tool_error_result
from ..server.rounds import input_required_result, unseal
from ..server.tools import TOOLS
from .attempt import Outcome, run_attempt, validate_arguments
from .execution import TaskOutbound
from .record import TaskState
from .service import TaskService

if TYPE_CHECKING:
    from ..context.outbound import Outbound
    from ..server.core import ServerCore

__all__ = ["TaskToolCalls", "call_task_tool", "missing_extension"]


def missing_extension(what: str) -> McpError:
    """``-32021``: the request needs the tasks extension the client did not declare."""
    return McpError(JsonRpcErrorCode.MissingRequiredClientCapability,
                    f"{what} needs the {TASKS} extension: declare it in the request's client capabilities.",
                    {"requiredCapabilities": {"extensions": {TASKS: {}}}})


class TaskToolCalls:
    """``core.tasks``: how ``tools/call`` of a tool declared ``task=`` reaches ``svc``."""

    __slots__ = ("svc",)

    def __init__(self, svc: TaskService) -> None:
        self.svc = svc

    def call(self, core: ServerCore, tool: ToolDefinition, params: dict[str, Any],
             req: Inbound) -> Awaitable[dict[str, Any]]:
        """``tools/call`` of ``tool`` (see :func:`call_task_tool`)."""
        return call_task_tool(self.svc, tool, params, req)


def _ttl(svc: TaskService, tool: ToolDefinition, hint: Any) -> int:
    s = svc.core.settings
    default = (tool.task.ttl_ms if tool.task is not None else None) or s.tasks_ttl_ms
    asked = hint.get("ttl") if type(hint) is dict else None
    if type(asked) is int and asked > 0:
        return min(max(asked, 1000), s.tasks_max_ttl_ms)
    return default


async def call_task_tool(svc: TaskService, tool: ToolDefinition, params: dict[str, Any],
                         req: Inbound) -> dict[str, Any]:
    """Answer ``tools/call`` of ``tool`` (declared ``task=``) with a task or a result."""
    core = svc.core
    support = tool.task
    assert support is not None
    name = tool.name
    if req.era is Era.MODERN:
        if client_extension(req.client_capabilities, TASKS) is None:
            if support.required:
                raise missing_extension(f"The tool {name}")
            return await invoke(core, pipeline_of(TOOLS, tool), params.get("arguments"), req, name)
        hint = None
    else:
        hint = params.get("task")
        if hint is None:
            if support.required:
                raise McpError(JsonRpcErrorCode.MethodNotFound,
                               f"The tool {name} runs only as a task: call it with params.task.",
                               {"reason": "task_required"})
            return await invoke(core, pipeline_of(TOOLS, tool), params.get("arguments"), req, name)
        if type(hint) is not dict:
            raise McpError(JsonRpcErrorCode.InvalidParams, '"task" must be an object ({"ttl": ms}).')
    if tool.auth:
        core.check_scopes(tool.auth, req)
    arguments = params.get("arguments")
    try:
        validated = validate_arguments(tool, arguments)
    except McpError as err:  # answered as an ordinary call answers bad arguments
        return tool_error_result(err, tool.errors, req.request_id)
    if req.request_state is not None:
        unseal(core, req, TOOLS.operation(tool, name))
    ttl = _ttl(svc, tool, hint)
    if support.start == "handler" and req.era is Era.MODERN:
        return await _deferred(svc, tool, arguments, validated, req, ttl)
    st = await svc.create(tool, arguments, req, ttl)
    svc.executions.launch(st, tool, validated)
    return svc.created(st, req.era)



class _Relay:
    """A deferred call's outbound: the request's until the task starts, the task's after."""

    def __init__(self, target: Outbound) -> None:
        self.target: Any = target

    def post(self, message: dict[str, Any]) -> None:
        self.target.post(message)

    async def drain(self) -> None:
        await self.target.drain()

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        result: dict[str, Any] = await self.target.request(method, params)
        return result


class _Start:
    """``req.task`` of a deferred call: ``ctx.start_task()`` creates the task."""

    def __init__(self, svc: TaskService, tool: ToolDefinition, arguments: Any, req: Inbound, ttl: int) -> None:
        self.svc = svc
        self.tool = tool
        self.arguments = arguments
        self.req = req
        self.ttl = ttl
        self.state: TaskState | None = None
        self.started: asyncio.Future[TaskState] = asyncio.get_running_loop().create_future()
        self.attempt: asyncio.Task[Outcome | None] | None = None

    @property
    def task_id(self) -> str | None:
        return self.state.task_id if self.state is not None else None

    async def start(self, message: str | None = None) -> None:
        if self.state is not None or self.started.done():
            return
        try:
            st = await self.svc.create(self.tool, self.arguments, self.req, self.ttl, message)
        except BaseException as exc:
            if not self.started.done():
                self.started.set_exception(exc)
            raise
        self.state = st
        relay = self.req.outbound
        if isinstance(relay, _Relay):
            relay.target = TaskOutbound(self.svc.executions, st.meta, st.attempt)
        assert self.attempt is not None
        self.svc.executions.adopt(st, self.attempt, self.req)
        self.started.set_result(st)


async def _deferred(svc: TaskService, tool: ToolDefinition, arguments: Any, validated: Any, caller: Inbound,
                    ttl: int) -> dict[str, Any]:
    req = caller.for_task()
    req.outbound = _Relay(caller.outbound)
    handle = _Start(svc, tool, arguments, req, ttl)
    req.task = handle

    async def drive() -> Outcome | None:
        outcome = await run_attempt(svc.core, tool, validated, req)
        if handle.state is None:
            return outcome
        await svc.executions.settle(handle.state, outcome)
        return None

    attempt = handle.attempt = asyncio.get_running_loop().create_task(drive())
    try:
        pending: list[asyncio.Future[Any]] = [attempt, handle.started]
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        if handle.state is None:
            req.signal.abort("the client closed the request")
            attempt.cancel()
        raise
    if handle.started.done():
        if handle.started.exception() is not None:
            attempt.cancel()
        return svc.created(handle.started.result(), caller.era)
    outcome = attempt.result()
    assert outcome is not None
    if outcome.kind == "result" and outcome.result is not None:
        return outcome.result
    if outcome.kind == "input" and outcome.spec is not None:
        return input_required_result(svc.core, outcome.spec, caller, TOOLS.operation(tool, tool.name))
    err = outcome.error or McpError(JsonRpcErrorCode.InternalError)
    if outcome.kind == "protocol":
        raise err
    return tool_error_result(err, tool.errors, caller.request_id)
