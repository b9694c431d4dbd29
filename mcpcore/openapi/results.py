"""An API's response as a tool result.

- 2xx JSON: ``structuredContent`` (wrapped as ``{"result": ...}`` when the schema's root is not an
  object), checked against the output schema: a mismatch is logged with its field paths and the
  result goes out as the API sent it, unless strict output was asked for (then it is a tool error
  naming the paths).
- 2xx text: text, cut at the text bound with a note saying how much was left out.
- 2xx binary: embedded (base64) when small, else a note, and a ``resource_link`` to the URL when
  the API is remote; never the whole of a large body.
- Anything else: a tool error with the status, the API's error body (bounded) and a recovery hint
  for the status.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from typing import Any

import httpx

from .. import _json
from ..content import ToolResult
from ..errors import JsonRpcErrorCode, McpError
from .validate import output_problems

__all__ = ["Bounds", "error_for", "result_for"]

log = logging.getLogger("mcpcore.openapi")
ERROR_BODY_MAX = 2000
"""Characters of an API's error body a tool error carries."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """How much of a response a tool result may carry.

    Args:
        max_bytes: of the body read at all (the rest is never read).
        max_text: characters of text content.
        max_binary: bytes of a binary body embedded as a resource.
    """

    max_bytes: int = 1_000_000
    max_text: int = 50_000
    max_binary: int = 256_000


_HINTS = {
    400: "The API refused the arguments; read its message above, correct them and call again.",
    401: "The API did not accept the credentials this server sent; the server's credential configuration for "
         "this API needs attention.",
    403: "The API refused this caller; call it as a user allowed to, or ask for the access.",
    404: "Nothing exists at these identifiers; check them (list or search first) and call again.",
    405: "The API does not allow this method here; the tool's description and the API disagree.",
    409: "The request conflicts with the current state; read it again, then retry with the new state.",
    412: "The resource changed since it was read; read it again and retry.",
    413: "The request is too large for the API; send less at once.",
    415: "The API did not accept the body's format; the tool's description and the API disagree.",
    422: "The API could not process these arguments; read its message above, correct them and call again.",
    429: "The API is rate limiting; wait before calling again.",
}
_CODES = {400: JsonRpcErrorCode.InvalidParams, 401: JsonRpcErrorCode.Unauthorized, 403: JsonRpcErrorCode.Forbidden,
          404: JsonRpcErrorCode.NotFound, 409: JsonRpcErrorCode.Conflict, 412: JsonRpcErrorCode.Conflict,
          422: JsonRpcErrorCode.InvalidParams, 429: JsonRpcErrorCode.RateLimited, 408: JsonRpcErrorCode.Timeout,
          504: JsonRpcErrorCode.Timeout}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def error_for(response: httpx.Response, body: bytes, more: bool, route: str) -> McpError:
    """A non-2xx response as a tool error: ``data.status``, ``data.body`` (bounded) and a hint."""
    status = response.status_code
    text = body.decode(response.encoding or "utf-8", errors="replace")
    shown: Any = _cut(text, ERROR_BODY_MAX) + (" […]" if more else "")
    if "json" in response.headers.get("content-type", "") and not more and len(text) <= ERROR_BODY_MAX:
        try:
            shown = _json.loads(body)
        except ValueError:
            pass
    hint = _HINTS.get(status) or ("The API failed; retry in a little while." if status >= 500 else
                                  "The API refused the call; read its message above.")
    data: dict[str, Any] = {"reason": "api_error", "status": status, "body": shown, "recovery": {"hint": hint}}
    retry_after = response.headers.get("retry-after")
    if status == 429 or status >= 500:
        data["retryable"] = True
        if retry_after and retry_after.isdigit():
            data["retryAfterSeconds"] = int(retry_after)
            data["recovery"]["hint"] = f"The API asks to wait {int(retry_after)} s before calling again."
    phrase = response.reason_phrase or ""
    summary = _cut(" ".join(text.split()), 300) if text.strip() else "(no body)"
    code = _CODES.get(status, JsonRpcErrorCode.ServiceUnavailable if status >= 500 else JsonRpcErrorCode.Forbidden)
    return McpError(code, f"{route} answered {status} {phrase}: {summary}".replace("  ", " "), data)


def _note(kind: str, shown: int, total: str) -> dict[str, Any]:
    return {"type": "text", "text": f"[{kind}: {shown} of {total} shown; the rest was not read. Narrow the request "
                                    "(a filter, a smaller page) to see all of it.]"}


def result_for(response: httpx.Response, body: bytes, more: bool, *, bounds: Bounds, wrap: bool,
               validator: Any, strict: bool, tool: str, remote: bool) -> ToolResult:
    """A 2xx response as the tool's result (see the module docstring)."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    length = response.headers.get("content-length")
    total = f"{length} bytes" if length and length.isdigit() else ("more than " if more else "") + f"{len(body)} bytes"
    if not body and not more:
        done: list[Any] = [{"type": "text", "text": f"Done: {response.status_code} {response.reason_phrase}, "
                                                     "no content."}]
        return ToolResult(content=done, structured_content={} if validator is not None else None)
    if kind == "application/json" or kind.endswith("+json"):
        if more:
            raise McpError(JsonRpcErrorCode.ServiceUnavailable, f"The API's answer is larger than {bounds.max_bytes} "
                           "bytes, more than a tool result carries.",
                           {"reason": "response_too_large", "recovery": {"hint": "Narrow the request (a filter, a "
                                                                                "smaller page size) and call again."}})
        try:
            value = _json.loads(body)
        except ValueError:
            kind = "text/plain"
        else:
            return _structured(value, body, bounds, wrap, validator, strict, tool)
    if kind.startswith("text/") or kind in ("application/xml", "application/yaml", "application/javascript"):
        text = body.decode(response.encoding or "utf-8", errors="replace")
        content: list[Any] = [{"type": "text", "text": _cut(text, bounds.max_text)}]
        if more or len(text) > bounds.max_text:
            content.append(_note("truncated text", min(len(text), bounds.max_text), total))
        return ToolResult(content=content, structured_content={} if validator is not None else None)
    uri = str(response.request.url)
    if not more and len(body) <= bounds.max_binary:
        blob = {"uri": uri, "mimeType": kind or "application/octet-stream", "blob": base64.b64encode(body).decode()}
        return ToolResult(content=[{"type": "resource", "resource": blob}],
                          structured_content={} if validator is not None else None)
    note: list[Any] = [{"type": "text", "text": f"A {kind or 'binary'} body of {total}, too large to embed "
                                        f"(at most {bounds.max_binary} bytes are)."}]
    if remote:
        note.append({"type": "resource_link", "uri": uri, "name": uri.rsplit("/", 1)[-1] or "download",
                     "mimeType": kind or "application/octet-stream"})
    return ToolResult(content=note, structured_content={} if validator is not None else None)


def _structured(value: Any, body: bytes, bounds: Bounds, wrap: bool, validator: Any, strict: bool,
                tool: str) -> ToolResult:
    structured = {"result": value} if wrap or not isinstance(value, dict) else value
    if validator is not None:
        problems = output_problems(validator, structured)
        if problems:
            where = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
            if strict:
                raise McpError(JsonRpcErrorCode.InternalError, f"The API's answer does not match the tool's output "
                               f"schema ({_cut(where, 500)}).",
                               {"reason": "invalid_output", "issues": problems,
                                "recovery": {"hint": "The API's description and its answers disagree; report it to "
                                                     "the server's maintainers."}})
            log.warning("tool %s: the API's answer departs from its output schema at %s", tool, _cut(where, 1000),
                        extra={"fields": {"tool": tool, "paths": [p["path"] for p in problems]}})
    text = body.decode("utf-8", errors="replace")
    content: list[Any] = [{"type": "text", "text": _cut(text, bounds.max_text)}]
    if len(text) > bounds.max_text:
        content.append(_note("truncated text (structuredContent has all of it)", bounds.max_text, f"{len(text)} chars"))
    return ToolResult(content=content, structured_content=structured)
