"""One attempt of a task's handler: the tool called once, its ending classified.

An attempt ends four ways, and the task (or, before a task exists, the call) follows:

* ``result``: the handler returned, or failed on purpose (an :class:`~mcpcore.errors.McpError`,
  ``ctx.fail``): a ``CallToolResult``, ``isError`` for the latter, as an ordinary call
  answers. The task is ``completed``.
* ``input``: the handler asked the client (``ctx.request_input``). The task waits in
  ``input_required`` until ``tasks/update`` (or, on 2025-11-25, ``tasks/result``) brings the
  answers; the handler then runs again with them on ``ctx.inputs``.
* ``protocol``: a refusal the protocol defines (missing client capability, ...): the task is
  ``failed`` with that JSON-RPC error, as the call would have been answered.
* ``crash``: an exception that is not an ``McpError`` (a bug, a lost dependency): the task is
  ``failed`` with an internal error. (An ordinary call answers it as an ``isError`` result.)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..context import Context, Inbound
from ..context.inputs import InputRequired, InputRequiredSpec
from ..definitions.tools import ToolDefinition
from ..errors import McpError
from ..server.dependencies import Resolution
from ..server.invoke import PROTOCOL_ERRORS, validated_arguments
from ..server.results import classify_and_log, tool_error_result
from ..server.tools import TOOLS

if TYPE_CHECKING:
    from ..server.core import ServerCore

__all__ = ["Outcome", "run_attempt", "validate_arguments"]


@dataclass(slots=True)
class Outcome:
    """How an attempt ended (see the module's doc)."""

    kind: Literal["result", "input", "protocol", "crash"]
    result: dict[str, Any] | None = None
    spec: InputRequiredSpec | None = None
    error: McpError | None = None


def validate_arguments(tool: ToolDefinition, args: Any) -> Any:
    """The tool's validated arguments; raises the one bad-arguments :class:`McpError`."""
    return validated_arguments(TOOLS, tool, args)


async def _call(core: ServerCore, tool: ToolDefinition, validated: Any, req: Inbound) -> dict[str, Any]:
    plan = tool.args
    kwargs = plan.kwargs(validated)
    operation = TOOLS.operation(tool, tool.name)
    ctx: Context | None = None
    if plan.ctx_param is not None:
        ctx = TOOLS.context(tool, req, operation, tool.name)
        kwargs[plan.ctx_param] = ctx
    direct = tool.direct
    if not plan.deps:
        value = await (direct(**kwargs) if direct is not None else tool.call(kwargs))
        return TOOLS.shape(tool, value, ctx, req, tool.name)
    # An attempt resolves the tool's dependencies itself: it may run on another instance, long
    # after the call that created the task, so what that request resolved is not at hand.
    async def handler(resolved: dict[str, Any]) -> Any:
        kwargs.update(resolved)
        return await (direct(**kwargs) if direct is not None else tool.call(kwargs))

    deps = Resolution(functools.partial(TOOLS.context, tool, req, operation, tool.name), core.dependency_overrides)
    value = await deps.around(plan.deps, handler)
    return TOOLS.shape(tool, value, ctx, req, tool.name)


async def run_attempt(core: ServerCore, tool: ToolDefinition, validated: Any, req: Inbound) -> Outcome:
    """Call ``tool`` once with ``req`` (its answers and state already on it); never raises but
    for cancellation."""
    where = f"tool:{tool.name} (task)"
    tel = core.telemetry
    try:
        if tel is None:
            return Outcome("result", await _call(core, tool, validated, req))
        with tel.tool_call(tool.name, req) as report:
            try:
                result = await _call(core, tool, validated, req)
            except BaseException:
                report(True)
                raise
            report(bool(result.get("isError")))
            return Outcome("result", result)
    except InputRequired as sig:
        return Outcome("input", spec=sig.spec)
    except McpError as exc:
        err = classify_and_log(exc, where, req.request_id)
        if err.code in PROTOCOL_ERRORS:
            return Outcome("protocol", error=err)
        return Outcome("result", tool_error_result(err, tool.errors, req.request_id))
    except Exception as exc:
        return Outcome("crash", error=classify_and_log(exc, where, req.request_id))
