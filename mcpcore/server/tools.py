"""``tools/list`` and ``tools/call``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..context import Context, Inbound
from ..context.inputs import InputRequired
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.versions import Era
from .results import classify_and_log, tool_error_result, tool_success_result
from .rounds import run_rounds

if TYPE_CHECKING:
    from ..definitions.tools import ToolDefinition
    from .dispatcher import Dispatcher

__all__ = ["PROTOCOL_ERRORS", "call_tool"]

# Errors about the request itself, not the tool's work: they stay JSON-RPC errors.
PROTOCOL_ERRORS = frozenset({JsonRpcErrorCode.MissingRequiredClientCapability, JsonRpcErrorCode.HeaderMismatch})


def _invalid_arguments(message: str, issues: list[dict[str, Any]] | None = None) -> McpError:
    data: dict[str, Any] = {"reason": "invalid_arguments",
                            "recovery": {"hint": "Check the tool's inputSchema and call it again with corrected "
                                                 "arguments."}}
    if issues:
        data["issues"] = issues
    return McpError(JsonRpcErrorCode.InvalidParams, message, data)


def _issues(exc: ValidationError) -> list[dict[str, Any]]:
    out = []
    for e in exc.errors(include_url=False, include_input=False)[:20]:
        out.append({"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]})
    return out


async def call_tool(d: Dispatcher, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    name = params.get("name")
    if type(name) is not str:
        raise McpError(JsonRpcErrorCode.InvalidParams, 'tools/call needs a string "name".')
    tool = d.registry.tools.get(name)
    if tool is None:
        raise McpError(JsonRpcErrorCode.InvalidParams, f"Unknown tool: {name}", {"reason": "unknown_tool"})
    if tool.auth:
        d.check_scopes(tool.auth, req)
    args = params.get("arguments")
    if args is None:
        args = {}
    elif type(args) is not dict:
        return tool_error_result(_invalid_arguments('"arguments" must be an object.'), (), req.request_id)
    plan = tool.args
    stray = args.keys() - plan.field_keys
    if stray:
        extra = sorted(k for k in stray if not k.startswith("_"))
        if extra:
            return tool_error_result(
                _invalid_arguments(f"Unknown argument(s): {', '.join(extra)}.",
                                   [{"path": k, "message": "not an argument of this tool"} for k in extra]),
                (), req.request_id)
        args = {k: v for k, v in args.items() if k not in stray}
    try:
        validated = plan.validator.validate_python(args)
    except ValidationError as exc:
        issues = _issues(exc)
        first = issues[0] if issues else {"path": "", "message": "invalid"}
        msg = f"Invalid arguments: {first['path'] or 'input'}: {first['message']}"
        return tool_error_result(_invalid_arguments(msg, issues), (), req.request_id)
    operation = "tool:" + name
    tel = d.telemetry
    if tel is None:
        if req.request_state is None:
            try:  # the common case: one round, no state to verify
                return await _attempt(tool, plan.kwargs(validated), req, operation)
            except InputRequired as sig:
                return await _rounds(d, req, operation, _attempts(tool, validated, req, operation), tool, sig)
        return await _rounds(d, req, operation, _attempts(tool, validated, req, operation), tool)
    with tel.tool_call(name, req) as report:
        try:
            result = await _rounds(d, req, operation, _attempts(tool, validated, req, operation), tool)
        except BaseException:
            report(True)
            raise
        report(bool(result.get("isError")))
        return result


def _attempts(tool: ToolDefinition, validated: Any, req: Inbound,
              operation: str) -> Callable[[], Awaitable[dict[str, Any]]]:
    """One call of the handler per input round, each with fresh arguments and context."""
    return lambda: _attempt(tool, tool.args.kwargs(validated), req, operation)


async def _attempt(tool: ToolDefinition, kwargs: dict[str, Any], req: Inbound,
                   operation: str) -> dict[str, Any]:
    """Call the handler once; its value or failure as a ``CallToolResult`` (``InputRequired``
    and protocol errors propagate)."""
    ctx: Context | None = None
    if tool.args.ctx_param is not None:
        ctx = Context(req, operation=operation, errors=tool.errors)
        kwargs[tool.args.ctx_param] = ctx
    try:
        direct = tool.direct
        value = await (direct(**kwargs) if direct is not None else tool.call(kwargs))
        result = tool_success_result(tool, value, ctx, req.era is Era.MODERN)
        return result if tool.app is None else tool.app.shape(result, req.client_capabilities)
    except InputRequired:
        raise
    except McpError as exc:
        if exc.code in PROTOCOL_ERRORS:
            raise
        err = classify_and_log(exc, operation, req.request_id)
        return tool_error_result(err, tool.errors, req.request_id)
    except Exception as exc:
        err = classify_and_log(exc, operation, req.request_id)
        return tool_error_result(err, tool.errors, req.request_id)


async def _rounds(d: Dispatcher, req: Inbound, operation: str, attempt: Any, tool: Any,
                  first: InputRequired | None = None) -> dict[str, Any]:
    try:
        return await run_rounds(d, req, operation, attempt, first)
    except McpError as exc:
        if exc.code in PROTOCOL_ERRORS or (exc.data or {}).get("reason") == "invalid_request_state":
            raise
        err = classify_and_log(exc, operation, req.request_id)
        return tool_error_result(err, tool.errors, req.request_id)
