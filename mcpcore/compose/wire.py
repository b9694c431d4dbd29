"""Definitions made from what a backend lists: each hands its requests over whole (``forward``),
so the backend's schemas, results and errors reach the caller as the backend wrote them."""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..definitions.prompts import PromptDefinition
from ..definitions.resources import ResourceDefinition
from ..definitions.schema import ArgsPlan, args_plan
from ..definitions.tasks import TaskSupport
from ..definitions.tools import ToolDefinition
from ..definitions.uritemplate import UriTemplate
from ..errors import JsonRpcErrorCode, McpError
from ..server.results import tool_error_result

__all__ = ["Breaker", "Forward", "ProxiedTool", "prompt_from", "resource_from", "template_from", "tool_from",
           "unavailable", "wrap_for_legacy"]

Forward = Callable[[dict[str, Any], Any], Awaitable[dict[str, Any]]]


def _nothing() -> None:
    """Never called: a forwarded definition's handler is the backend."""


def _unused(kwargs: dict[str, Any]) -> Any:
    raise McpError(JsonRpcErrorCode.InternalError, "a proxied definition is served by its backend")


@functools.cache
def _args() -> ArgsPlan:
    return args_plan(_nothing, "proxy", model_name="ProxiedArguments")


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, dict) else None


class ProxiedTool(ToolDefinition):
    """A backend's tool. A 2026-07-28 output schema that is not an object (its results carry any
    JSON) is listed to 2025 callers wrapped as ``{"result": ...}``, as their results are."""

    __slots__ = ()

    def to_wire(self, modern: bool = False) -> dict[str, Any]:
        out = ToolDefinition.to_wire(self, modern)
        schema = out.get("outputSchema")
        if not modern and isinstance(schema, dict) and schema.get("type") != "object":
            inner = {k: v for k, v in schema.items() if k != "$defs"}
            out["outputSchema"] = {"type": "object", "properties": {"result": inner}, "required": ["result"],
                                   **({"$defs": schema["$defs"]} if "$defs" in schema else {})}
        return out


def wrap_for_legacy(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result for a 2025 caller: ``structuredContent`` that is not an object wrapped as
    ``{"result": ...}`` (2025 requires an object; a 2026-07-28 backend may send any JSON)."""
    sc = result.get("structuredContent")
    if "structuredContent" in result and not isinstance(sc, dict):
        result["structuredContent"] = {"result": sc}
    return result


def tool_from(entry: dict[str, Any], forward: Forward) -> ToolDefinition:
    """A tool of the backend's ``tools/list``."""
    schema = _dict(entry.get("inputSchema")) or {"type": "object"}
    return ProxiedTool(name=entry["name"], description=_str(entry.get("description")) or "", fn=_nothing,
                          args=_args(), call=_unused, title=_str(entry.get("title")),
                          annotations=_dict(entry.get("annotations")), meta=_dict(entry.get("_meta")),
                          icons=entry.get("icons") if isinstance(entry.get("icons"), list) else None,
                          input_schema=schema, output_schema=_dict(entry.get("outputSchema")), forward=forward,
                          task=_task_support(entry))


def _task_support(entry: dict[str, Any]) -> TaskSupport | None:
    """The ``execution.taskSupport`` a 2025-era list gives (listed to 2025 callers as it was; a
    2026-07-28 list gives none: its server alone decides)."""
    mode = (_dict(entry.get("execution")) or {}).get("taskSupport")
    return TaskSupport(mode) if mode in ("optional", "required") else None


def prompt_from(entry: dict[str, Any], forward: Forward, complete: dict[str, Any]) -> PromptDefinition:
    """A prompt of the backend's ``prompts/list``."""
    args = entry.get("arguments")
    return PromptDefinition(name=entry["name"], description=_str(entry.get("description")) or "", fn=_nothing,
                            args=_args(), call=_unused, arguments=list(args) if isinstance(args, list) else [],
                            title=_str(entry.get("title")), complete=complete, meta=_dict(entry.get("_meta")),
                            icons=entry.get("icons") if isinstance(entry.get("icons"), list) else None,
                            forward=forward)


def _resource(uri: str, entry: dict[str, Any], forward: Forward, complete: dict[str, Any]) -> ResourceDefinition:
    size = entry.get("size")
    return ResourceDefinition(uri=uri, template=UriTemplate(uri), name=_str(entry.get("name")) or uri, fn=_nothing,
                              args=_args(), call=_unused, title=_str(entry.get("title")),
                              description=_str(entry.get("description")), mime_type=_str(entry.get("mimeType")),
                              size=size if isinstance(size, int) else None,
                              annotations=_dict(entry.get("annotations")), complete=complete,
                              meta=_dict(entry.get("_meta")),
                              icons=entry.get("icons") if isinstance(entry.get("icons"), list) else None,
                              forward=forward)


def resource_from(entry: dict[str, Any], forward: Forward) -> ResourceDefinition:
    """A resource of the backend's ``resources/list``."""
    return _resource(entry["uri"], entry, forward, {})


def template_from(entry: dict[str, Any], forward: Forward, complete: dict[str, Any]) -> ResourceDefinition:
    """A template of the backend's ``resources/templates/list``."""
    return _resource(entry["uriTemplate"], entry, forward, complete)


class Breaker:
    """A circuit breaker: after ``failures`` failures in a row the backend is not called for
    ``cooldown_s`` (doubling while it stays down, up to ``max_cooldown_s``); then one call tries it."""

    def __init__(self, failures: int = 5, cooldown_s: float = 5.0, max_cooldown_s: float = 60.0) -> None:
        self.threshold = failures
        self.base = cooldown_s
        self.max = max_cooldown_s
        self.failures = 0
        self.cooldown = cooldown_s
        self.open_until = 0.0
        self.last_error: str | None = None

    def retry_after(self) -> float:
        """Seconds until the backend may be called again (``0``: now)."""
        return max(0.0, self.open_until - time.monotonic())

    @property
    def is_open(self) -> bool:
        return self.failures >= self.threshold

    def success(self) -> None:
        self.failures = 0
        self.cooldown = self.base
        self.open_until = 0.0
        self.last_error = None

    def failure(self, reason: str) -> None:
        self.failures += 1
        self.last_error = reason
        if self.failures >= self.threshold:
            self.open_until = time.monotonic() + self.cooldown
            self.cooldown = min(self.cooldown * 2, self.max)


def unavailable(url: str, why: str, wait: float, req: Any, tool: bool) -> dict[str, Any]:
    """A backend that is down, as the caller gets it: a tool's ``isError`` result (``tool``), else the
    error raised; ``-32000``, ``reason: backend_unavailable``, ``retryAfterMs`` and a hint."""
    ms = max(int(wait * 1000), 1000)
    err = McpError(JsonRpcErrorCode.ServiceUnavailable, f"{url} is unavailable: {why}",
                   {"reason": "backend_unavailable", "retryAfterMs": ms,
                    "recovery": {"hint": f"The backend is down; try again in {ms // 1000} s."}})
    if not tool:
        raise err
    return tool_error_result(err, (), req.request_id if req is not None else "")
