"""``tools/call``: the tool family of the invoke pipeline. A tool's failure is an ``isError``
result (bad arguments included); only an unknown tool and protocol refusals are JSON-RPC errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..context import Context, Inbound
from ..definitions.tools import ToolDefinition
from ..errors import JsonRpcErrorCode, McpError, quoted
from ..metrics import count_error
from ..protocol.versions import Era
from .invoke import Family, invoke
from .results import tool_error_result, tool_success_result
from .visibility import may_see

if TYPE_CHECKING:
    from ..telemetry import Telemetry
    from .core import ServerCore

__all__ = ["TOOLS", "call_tool"]


class ToolFamily(Family[ToolDefinition]):
    """Tools in the invoke pipeline."""

    noun = "tool"
    hint = "Check the tool's inputSchema and call it again with corrected arguments."

    def operation(self, d: ToolDefinition, target: str) -> str:
        return "tool:" + target

    def shape(self, d: ToolDefinition, value: Any, ctx: Context | None, req: Inbound, target: str) -> dict[str, Any]:
        result = tool_success_result(d, value, ctx, req.era is Era.MODERN)
        return result if d.app is None else d.app.shape(result, req.client_capabilities)

    def failed(self, d: ToolDefinition, err: McpError, req: Inbound) -> dict[str, Any]:
        count_error(err.code)
        return tool_error_result(err, d.errors, req.request_id)

    def observe(self, tel: Telemetry, d: ToolDefinition, req: Inbound,
                target: str) -> AbstractContextManager[Callable[[bool], None]]:
        return tel.tool_call(target, req)


TOOLS = ToolFamily()


def call_tool(core: ServerCore, params: dict[str, Any], req: Inbound) -> Awaitable[dict[str, Any]]:
    """``tools/call``: the named tool with ``params.arguments``."""
    name = params.get("name")
    if type(name) is not str:
        raise McpError(JsonRpcErrorCode.InvalidParams, 'tools/call needs a string "name".')
    tool = core.registry.tools.get(name)
    if tool is None or (tool.visible_to is not None and not may_see(core, tool, req)):
        raise McpError(JsonRpcErrorCode.InvalidParams, f"Unknown tool: {quoted(name)}", {"reason": "unknown_tool"})
    if tool.forward is not None:
        return tool.forward(params, req)
    if tool.task is not None and core.tasks is not None:
        return core.tasks.call(core, tool, params, req)
    pipe = tool.pipeline
    return invoke(core, pipe if pipe is not None else TOOLS.pipeline(tool), params.get("arguments"), req, name)
