"""One attempt of a task's handler: the tool's pipeline run once, its ending classified.

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

The attempt itself is :meth:`~mcpcore.server.invoke.Pipeline.once` of the tool's pipeline, the
one every ``tools/call`` runs: the same context, dependencies, handler call, shaping and
telemetry span.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..context import Inbound
from ..context.inputs import InputRequired, InputRequiredSpec
from ..definitions.tools import ToolDefinition
from ..errors import McpError
from ..server.invoke import PROTOCOL_ERRORS
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
    return TOOLS.pipeline(tool).validate(args)


async def run_attempt(core: ServerCore, tool: ToolDefinition, validated: Any, req: Inbound) -> Outcome:
    """Call ``tool`` once with ``req`` (its answers and state already on it); never raises but
    for cancellation."""
    try:
        return Outcome("result", await TOOLS.pipeline(tool).once(core, validated, req, tool.name))
    except InputRequired as sig:
        return Outcome("input", spec=sig.spec)
    except McpError as exc:
        err = classify_and_log(exc, f"tool:{tool.name} (task)", req.request_id)
        if err.code in PROTOCOL_ERRORS:
            return Outcome("protocol", error=err)
        return Outcome("result", tool_error_result(err, tool.errors, req.request_id))
    except Exception as exc:
        return Outcome("crash", error=classify_and_log(exc, f"tool:{tool.name} (task)", req.request_id))
