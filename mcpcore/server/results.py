"""Building ``CallToolResult`` objects: success (structured output, format, enrichment,
collected content) and failure (``isError``, the error envelope in ``_meta``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from .. import _json
from ..content import CONTENT_TYPES, ToolResult, to_wire
from ..context import Context
from ..definitions.tools import ToolDefinition
from ..errors import TOOL_ERROR_META, ErrorContract, JsonRpcErrorCode, McpError, classify

__all__ = ["classify_and_log", "error_text", "tool_error_result", "tool_success_result"]

log = logging.getLogger("mcpcore.server")


def tool_error_result(err: McpError, contracts: Sequence[ErrorContract], request_id: str) -> dict[str, Any]:
    """``isError`` result: the envelope under ``_meta[TOOL_ERROR_META]`` and, for the model, a text
    block ``Error: <message>`` (+ the argument issues, + ``Recovery: <hint>``).

    No ``structuredContent``: clients that validate it against the tool's ``outputSchema`` even on
    an error (TypeScript SDK 1.x, the Inspector) would turn the result into a thrown error."""
    payload = err.to_wire(request_id, contracts)
    return {"content": [{"type": "text", "text": error_text(payload)}], "isError": True,
            "_meta": {TOOL_ERROR_META: payload}}


def error_text(payload: dict[str, Any]) -> str:
    """The model-facing summary of an error envelope: message, further argument issues, hint."""
    data = payload.get("data") or {}
    text = f"Error: {payload['message']}"
    issues = data.get("issues")
    if isinstance(issues, list) and len(issues) > 1:
        text += "\n" + "\n".join(f"- {i.get('path') or 'input'}: {i.get('message')}" for i in issues
                                   if isinstance(i, dict))
    recovery = data.get("recovery")
    if isinstance(recovery, dict) and isinstance(recovery.get("hint"), str) and recovery["hint"]:
        text += f"\n\nRecovery: {recovery['hint']}"
    return text


NOTICE = 25
# Failures caused by the caller or its connection: logged at notice, not as server faults.
_CALLER_CODES = frozenset({
    JsonRpcErrorCode.InvalidParams, JsonRpcErrorCode.InvalidRequest, JsonRpcErrorCode.MethodNotFound,
    JsonRpcErrorCode.NotFound, JsonRpcErrorCode.ValidationError, JsonRpcErrorCode.Forbidden,
    JsonRpcErrorCode.Unauthorized, JsonRpcErrorCode.Conflict, JsonRpcErrorCode.RateLimited,
    JsonRpcErrorCode.RequestCancelled, JsonRpcErrorCode.MissingRequiredClientCapability,
    JsonRpcErrorCode.HeaderMismatch,
})
_CONTAINER = re.compile(r"^(?:>|[-*+](?:\s|$)|\d+[.)](?:\s|$))")


def _is_content(value: Any) -> bool:
    if isinstance(value, CONTENT_TYPES):
        return True
    return isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"] in (
        "text", "image", "audio", "resource", "resource_link")


def _render_value(value: Any) -> str:
    return value if isinstance(value, str) else _json.dumps_str(value)


def _trailer(tool: ToolDefinition, fields: dict[str, Any], kinds: dict[str, str]) -> str | None:
    lines: list[str] = []
    for key, value in fields.items():
        kind = kinds.get(key)
        spec = tool.enrichment_trailer.get(key) or {}
        if kind == "notice":
            text = "\n".join("> " + ln for ln in str(value).splitlines() or [""])
        elif kind == "total":
            text = f"**{value} total**"
        elif kind == "echo":
            text = f"Query: {value}"
        elif kind == "delta" and isinstance(value, dict):
            text = f"**{key}:** {_render_value(value.get('before'))} → {_render_value(value.get('after'))}"
        elif callable(spec.get("render")):
            text = str(spec["render"](value))
        else:
            label = spec.get("label") or key
            text = f"**{label}:** {_render_value(value)}"
        lines.append(text)
        last = text.rstrip().splitlines()[-1] if text.strip() else ""
        if _CONTAINER.match(last):
            lines.append("")
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) if lines else None


def _enrichment(tool: ToolDefinition, ctx: Context | None) -> tuple[dict[str, Any], dict[str, str]]:
    if tool.enrichment is None:
        return {}, {}
    enrich = ctx._enrich if ctx is not None else None
    raw = enrich.fields if enrich is not None else {}
    try:
        model = tool.enrichment.model_validate(raw)
    except ValidationError as exc:  # the handler's omission, not the caller's input
        missing = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise McpError(JsonRpcErrorCode.InternalError, f"Tool {tool.name!r} left its enrichment incomplete or "
                       f"invalid ({', '.join(missing)}).", {"reason": "invalid_output"}, cause=exc) from exc
    dumped = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    kinds = enrich.kinds if enrich is not None else {}
    return dumped, {k: v for k, v in kinds.items() if k in dumped}


def tool_success_result(tool: ToolDefinition, value: Any, ctx: Context | None, modern: bool = False) -> dict[str, Any]:
    """The result of a call that returned ``value``; raises on an output that breaks the schema.

    On 2026-07-28 a non-object result is sent as is; the 2025 era wraps it as ``{"result": ...}``."""
    if isinstance(value, ToolResult):
        out = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        out["content"] = [to_wire(b) for b in value.content]
        if ctx is not None and ctx._content is not None and ctx._content.blocks:
            out["content"] = ctx._content.blocks + out["content"]
        return out
    output = tool.output
    if (output is not None and ctx is None and tool.format is None and tool.enrichment is None
            and not tool.returns_content and value is not None
            and (type(value) is output.scalar or (type(value) is not list and not _is_content(value)))):
        # The common shape (typed output, no context extras) without the general path's branches.
        unwrap = modern and tool.unwrapped
        try:
            fast = output.dump(value, wrap=not unwrap)
        except ValidationError as exc:
            raise McpError(JsonRpcErrorCode.InternalError, f"Tool {tool.name!r} returned output that does not match "
                           "its declared return type.", {"reason": "invalid_output"}, cause=exc) from exc
        domain = fast["result"] if output.wrap and not unwrap else fast
        text = domain if type(domain) is str else _json.dumps_str(domain)
        return {"content": [{"type": "text", "text": text}], "structuredContent": fast}
    content: list[dict[str, Any]] = []
    if ctx is not None and ctx._content is not None:
        content.extend(ctx._content.blocks)
    structured: Any = None
    if tool.output is not None:
        try:
            structured = tool.output.dump(value, wrap=not (modern and tool.unwrapped))
        except ValidationError as exc:
            raise McpError(JsonRpcErrorCode.InternalError, f"Tool {tool.name!r} returned output that does not match "
                           "its declared return type.", {"reason": "invalid_output"}, cause=exc) from exc
    enrich_fields, kinds = _enrichment(tool, ctx)
    if tool.format is not None:
        content.extend(to_wire(b) for b in tool.format(value))
    elif tool.returns_content or _is_content(value) or (
            isinstance(value, list) and value and all(_is_content(v) for v in value)):
        blocks = value if isinstance(value, list) else [value]
        content.extend(to_wire(b) for b in blocks)
    elif value is not None:
        if structured is not None:
            domain = structured["result"] if tool.output is not None and tool.output.wrap and not (
                modern and tool.unwrapped) else structured
            text = domain if isinstance(domain, str) else _json.dumps_str(domain)
        else:
            text = _render_value(value)
        content.append({"type": "text", "text": text})
    trailer = _trailer(tool, enrich_fields, kinds) if enrich_fields else None
    if trailer:
        content.append({"type": "text", "text": trailer})
    result: dict[str, Any] = {"content": content}
    if tool.output is not None or tool.enrichment is not None:
        if structured is None and not (modern and tool.unwrapped):
            structured = {}
        if enrich_fields:
            structured = {**structured, **enrich_fields}
        result["structuredContent"] = structured
    return result


def classify_and_log(exc: BaseException, where: str, request_id: str) -> McpError:
    """Classify an exception for the wire and log it once, at a level that matches its cause.

    An error caused by a pydantic ``ValidationError`` (output that breaks the declared return
    type, say) logs the field path of each issue, which the client is not sent."""
    err = classify(exc)
    if err is exc:
        level = NOTICE if err.code in _CALLER_CODES else logging.ERROR
        fields: dict[str, Any] = {"requestId": request_id, "code": err.code, "error": err.message}
        issues = _issues(err.__cause__)
        if issues:
            fields["issues"] = issues
            shown = "; ".join(f"{i['path']}: {i['message']}" for i in issues[:3])
            log.log(level, "Error in %s (%s)", where, shown, extra={"fields": fields})
        else:
            log.log(level, "Error in %s", where, extra={"fields": fields})
    else:
        log.error("Error in %s", where, exc_info=exc, extra={"fields": {"requestId": request_id,
                                                                         "code": err.code}})
    return err


def _issues(cause: BaseException | None) -> list[dict[str, str]] | None:
    """``[{"path", "message"}]`` of a validation error: where, never the offending value."""
    if not isinstance(cause, ValidationError):
        return None
    return [{"path": ".".join(str(p) for p in e["loc"]) or "(the value itself)", "message": e["msg"]}
            for e in cause.errors(include_url=False, include_input=False)[:20]]
