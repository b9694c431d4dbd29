"""Optional OpenTelemetry (extra ``mcpcore[otel]``): a span per tool call, resource read and
prompt, storage operations as child spans, trace context from HTTP headers and 2026-07-28
``_meta``, and the ``mcp.tool.*`` / ``mcp.sessions.active`` metrics.

Off unless ``OTEL_ENABLED=true`` (or ``McpApp(telemetry=True)``). mcpcore only uses the
OpenTelemetry API; configure the SDK and exporters in your application as usual.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import Inbound

__all__ = ["Telemetry"]


class Telemetry:
    """Spans and metrics through the OpenTelemetry API (``tracer_provider``/``meter_provider``
    default to the globally configured ones)."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None,
                 sessions_active: Callable[[], int] | None = None,
                 buffer_bytes: Callable[[], tuple[int, int] | None] | None = None) -> None:
        try:
            from opentelemetry import metrics, trace
            from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
        except ImportError as exc:  # pragma: no cover - depends on the environment
            from .errors import ConfigurationError

            raise ConfigurationError("OTEL_ENABLED needs OpenTelemetry: pip install 'mcpcore[otel]'") from exc
        self._trace = trace
        self._propagator = TraceContextTextMapPropagator()
        self.tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer("mcpcore")
        meter = (meter_provider or metrics.get_meter_provider()).get_meter("mcpcore")
        self.calls = meter.create_counter("mcp.tool.calls", description="Tool calls")
        self.errors = meter.create_counter("mcp.tool.errors", description="Tool calls that failed")
        self.duration = meter.create_histogram("mcp.tool.duration", unit="ms", description="Tool call duration")
        self._sessions = sessions_active
        if sessions_active is not None:
            meter.create_observable_gauge("mcp.sessions.active", callbacks=[self._observe_sessions],
                                          description="2025-era sessions this process holds (Redis: is serving now)")
        self._buffer = buffer_bytes
        if buffer_bytes is not None:
            meter.create_observable_gauge("mcp.event_buffer.bytes", unit="By", callbacks=[self._observe_buffer(0)],
                                          description="Bytes of buffered SSE events this process holds")
            meter.create_observable_gauge("mcp.event_buffer.session_bytes.max", unit="By",
                                          callbacks=[self._observe_buffer(1)],
                                          description="Bytes of buffered SSE events of the session holding most")

    def _observe_buffer(self, which: int) -> Callable[[Any], Any]:
        def observe(options: Any) -> Any:
            from opentelemetry.metrics import Observation

            held = self._buffer() if self._buffer is not None else None
            if held is not None:
                yield Observation(held[which])
        return observe

    def _observe_sessions(self, options: Any) -> Any:
        from opentelemetry.metrics import Observation

        yield Observation(self._sessions() if self._sessions is not None else 0)

    def parent(self, carrier: Mapping[str, Any] | None) -> Any:
        """The OpenTelemetry context named by ``traceparent``/``tracestate`` in ``carrier``."""
        if not carrier:
            return None
        found = {k: v for k, v in carrier.items() if k in ("traceparent", "tracestate") and isinstance(v, str)}
        return self._propagator.extract(found) if found else None

    @contextlib.contextmanager
    def execution(self, name: str, req: Inbound, attributes: Mapping[str, Any]) -> Iterator[Any]:
        """A span for one handler execution; fills ``req.trace_id``/``span_id`` for the context."""
        carrier: dict[str, Any] = {}
        if req.meta:
            carrier.update(req.meta)
        if req.trace_headers:
            carrier.update(req.trace_headers)
        with self.tracer.start_as_current_span(name, context=self.parent(carrier), attributes=dict(attributes)) as span:
            sc = span.get_span_context()
            req.trace_id = format(sc.trace_id, "032x")
            req.span_id = format(sc.span_id, "016x")
            yield span

    @contextlib.contextmanager
    def tool_call(self, name: str, req: Inbound) -> Iterator[Callable[[bool], None]]:
        """A ``tool_execution:<name>`` span and the call metrics; call the yielded function with
        whether the call failed."""
        start = time.perf_counter()
        outcome = {"failed": False}

        def report(failed: bool) -> None:
            outcome["failed"] = failed

        attrs = {"mcp.tool.name": name, "mcp.request.id": req.request_id}
        with self.execution(f"tool_execution:{name}", req, attrs) as span:
            yield report
            if outcome["failed"]:
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
        labels = {"tool": name, "outcome": "error" if outcome["failed"] else "success"}
        self.calls.add(1, labels)
        self.duration.record((time.perf_counter() - start) * 1000, {"tool": name})
        if outcome["failed"]:
            self.errors.add(1, {"tool": name})

    @contextlib.contextmanager
    def storage(self, op: str) -> Iterator[None]:
        """A ``storage:<op>`` span, a child of the handler's span."""
        with self.tracer.start_as_current_span(f"storage:{op}"):
            yield
