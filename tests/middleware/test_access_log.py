"""AccessLog: one structured line per request, with the outcome, the caller and the trace ids
that join it to the OpenTelemetry spans; the duration as a metric."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcpcore import Context, McpApp, McpError, Settings, input_required, tool
from mcpcore.middleware import AccessLog
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio


@tool
async def fine(text: str) -> str:
    """Fine."""
    return text


@tool
async def broken() -> str:
    """Broken."""
    raise McpError(-32001, "Nothing here.")


@tool
async def asking(ctx: Context) -> str:
    """Ask."""
    return ctx.request_input({"x": input_required.elicit("X?", {"type": "object", "properties": {
        "v": {"type": "string"}}})})


def lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [r.fields for r in caplog.records if r.name == "mcpcore.access"]  # type: ignore[attr-defined]


async def test_one_line_per_request_with_outcome_and_caller(caplog: pytest.LogCaptureFixture) -> None:
    app = McpApp("log", tools=[fine, broken, asking], middleware=[AccessLog()], settings=Settings.from_env({}))
    with caplog.at_level(logging.INFO, logger="mcpcore.access"):
        async with McpTestClient(app, era="modern", capabilities={"elicitation": {}}) as c:
            await c.call_tool("fine", {"text": "x"})
            await c.call_tool("broken")
            await c.call_tool("asking")
            with pytest.raises(McpError):
                await c.call_tool("nope")
            await c.list_tools()
    got = lines(caplog)
    assert [(g["method"], g.get("name"), g["outcome"], g.get("code")) for g in got] == [
        ("tools/call", "fine", "ok", None), ("tools/call", "broken", "tool_error", -32001),
        ("tools/call", "asking", "input_required", None), ("tools/call", "nope", "error", -32602),
        ("tools/list", None, "ok", None)]
    first = got[0]
    assert first["durationMs"] >= 0 and first["requestId"] and first["tenantId"] == "default"
    assert first["transport"] == "http"


async def test_lines_carry_the_span_ids_when_traced(caplog: pytest.LogCaptureFixture) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcpcore.telemetry import Telemetry

    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    log = AccessLog(meter_provider=meters)
    app = McpApp("log", tools=[fine], middleware=[log], settings=Settings.from_env({}),
                 telemetry=Telemetry(tracer_provider=tracer, meter_provider=meters))
    with caplog.at_level(logging.INFO, logger="mcpcore.access"):
        async with McpTestClient(app, era="modern") as c:
            await c.call_tool("fine", {"text": "x"})
    line = lines(caplog)[0]
    span = next(s for s in exporter.get_finished_spans() if s.name == "tool_execution:fine")
    assert line["traceId"] == format(span.context.trace_id, "032x")
    assert line["spanId"] == format(span.context.span_id, "016x")
    data = reader.get_metrics_data()
    points = [p for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
              if m.name == "mcp.request.duration" for p in m.data.data_points]
    assert points and points[0].attributes == {"mcp.method.name": "tools/call", "outcome": "ok"}
