"""``tools/call``: the tool family of the invoke pipeline. A tool's failure is an ``isError``
result (bad arguments included); only an unknown tool and protocol refusals are JSON-RPC errors."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .. import _json
from ..context import Context, Inbound
from ..definitions.tools import ToolDefinition
from ..errors import JsonRpcErrorCode, McpError, quoted
from ..metrics import count_error
from ..protocol.versions import ERA_MODERN
from .family import Shape
from .invoke import Family, invoke, pipeline_of
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
        result = tool_success_result(d, value, ctx, req.era is ERA_MODERN)
        return result if d.app is None else d.app.shape(result, req.client_capabilities)

    def shaper(self, d: ToolDefinition) -> Shape:
        """A tool declaring a scalar return type (``-> str``, ``-> int``, ...) and nothing that
        adds to its result (no ``format``, enrichment, content return or App) is shaped without
        the general path when the handler returned that type and took no ``Context``: the same
        ``content`` text and ``structuredContent`` (``{"result": value}``, the bare value on
        2026-07-28 for an unwrapped tool) as :func:`~mcpcore.server.results.tool_success_result`."""
        out = d.output
        general = functools.partial(self.shape, d)
        if out is None or out.scalar is None or d.format is not None or d.enrichment is not None or \
                d.returns_content or d.app is not None:
            return general
        scalar, wrap, unwrapped = out.scalar, out.wrap, d.unwrapped
        dumps_str = _json.dumps_str

        def shape(value: Any, ctx: Context | None, req: Inbound, target: str) -> dict[str, Any]:
            if ctx is not None or type(value) is not scalar:
                return general(value, ctx, req, target)
            text = value if scalar is str else dumps_str(value)
            bare = not wrap or (unwrapped and req.era is ERA_MODERN)
            structured = value if bare else {"result": value}
            return {"content": [{"type": "text", "text": text}], "structuredContent": structured}

        return shape

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
    return invoke(core, pipe if pipe is not None else pipeline_of(TOOLS, tool), params.get("arguments"), req, name)
