"""``AccessLog``: one structured line per request, joined to the request's trace.

Each line (logger ``mcpcore.access``, message ``"access"``) carries in its fields: ``method``,
``name`` (the tool, prompt or resource), ``outcome`` (``ok``, ``tool_error``, ``error``,
``input_required``, ``cancelled``), ``code`` (the JSON-RPC or tool error code), ``durationMs``,
``requestId``, ``sessionId``, ``tenantId``, ``clientId``, ``subject``, ``transport`` and, when
OpenTelemetry traced the call, ``traceId`` and ``spanId`` of its span, so a log line finds its
trace. With OpenTelemetry installed the duration is also recorded as the histogram
``mcp.request.duration`` (ms; attributes ``mcp.method.name`` and ``outcome``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from ..errors import TOOL_ERROR_META, JsonRpcErrorCode, McpError
from .base import Call, CallNext, Middleware

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["AccessLog"]


class AccessLog(Middleware):
    """Log every request once it is answered.

    Args:
        logger: the logger (or its name) the lines go to.
        level: their level (default ``INFO``; ``mcpcore run`` shows them at ``MCP_LOG_LEVEL=info``).
        metrics: record ``mcp.request.duration`` when OpenTelemetry is installed.
        meter_provider: where to record it (default: the globally configured provider).
    """

    def __init__(self, *, logger: str | logging.Logger = "mcpcore.access", level: int = logging.INFO,
                 metrics: bool = True, meter_provider: Any = None) -> None:
        self.log = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level
        self._metrics = metrics
        self._meter_provider = meter_provider
        self._histogram: Any = None

    async def startup(self, settings: Settings, redis: Any = None) -> None:
        """Create the duration histogram (through the globally configured meter provider)."""
        if not self._metrics:
            return
        try:
            from opentelemetry import metrics
        except ImportError:
            return
        provider = self._meter_provider or metrics.get_meter_provider()
        self._histogram = provider.get_meter("mcpcore").create_histogram(
            "mcp.request.duration", unit="ms", description="Duration of MCP requests, by method and outcome")

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        started = time.perf_counter()
        outcome = "error"
        code: int | None = None
        try:
            result = await call_next(call)
        except McpError as exc:
            code = exc.code
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except Exception:
            code = JsonRpcErrorCode.InternalError
            raise
        else:
            outcome, code = _outcome(result)
            return result
        finally:
            self._write(call, outcome, code, (time.perf_counter() - started) * 1000)

    def _write(self, call: Call, outcome: str, code: int | None, ms: float) -> None:
        if self._histogram is not None:
            self._histogram.record(ms, {"mcp.method.name": call.method, "outcome": outcome})
        if not self.log.isEnabledFor(self.level):
            return
        req = call._req
        auth = req.auth
        fields: dict[str, Any] = {"method": call.method, "outcome": outcome, "durationMs": round(ms, 3),
                                  "requestId": req.request_id, "transport": req.transport}
        name = call.name
        if name is not None:
            fields["name"] = name
        if code is not None:
            fields["code"] = int(code)
        for key, value in (("sessionId", req.session_id), ("tenantId", req.tenant_id),
                           ("clientId", auth.client_id if auth else None), ("subject", auth.subject if auth else None),
                           ("traceId", req.trace_id), ("spanId", req.span_id)):
            if value:
                fields[key] = value
        self.log.log(self.level, "access", extra={"fields": fields})


def _outcome(result: Any) -> tuple[str, int | None]:
    if type(result) is not dict:
        return "ok", None
    if result.get("isError"):
        envelope = (result.get("_meta") or {}).get(TOOL_ERROR_META) or {}
        code = envelope.get("code")
        return "tool_error", code if isinstance(code, int) else None
    if result.get("resultType") == "input_required":
        return "input_required", None
    return "ok", None
