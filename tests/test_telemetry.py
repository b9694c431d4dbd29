"""OpenTelemetry: span names and parentage, storage child spans, ctx.trace_id, metrics,
trace context from HTTP headers and 2026-07-28 _meta, off by default."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpcore import Context, McpApp, Settings, prompt, resource, tool
from mcpcore.telemetry import Telemetry
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio

SEEN: dict[str, Any] = {}
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@tool
async def traced(ctx: Context) -> str:
    """Touch state and report the trace ids."""
    await ctx.state.set("k", 1)
    await ctx.state.get("k")
    SEEN.update(trace=ctx.trace_id, span=ctx.span_id)
    ctx.log.info("inside")
    return "ok"


@tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("no")


@resource("r://x")
def res() -> str:
    return "x"


@prompt
def p() -> str:
    """A prompt."""
    return "hi"


def setup() -> tuple[McpApp, InMemorySpanExporter, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    app = McpApp("t", "1", tools=[traced, broken], resources=[res], prompts=[p], settings=Settings.from_env({}),
                 telemetry=Telemetry(tp, mp, sessions_active=lambda: 3))
    return app, exporter, reader


async def test_spans_parentage_and_trace_ids() -> None:
    app, exporter, reader = setup()
    async with McpTestClient(app, headers={"traceparent": PARENT}) as c:
        await c.call_tool("traced")
        await c.call_tool("broken")
        await c.read_resource("r://x")
        await c.get_prompt("p")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert {"tool_execution:traced", "tool_execution:broken", "resource_read:res", "prompt_generation:p",
            "storage:set", "storage:get"} <= set(spans)
    tool_span = spans["tool_execution:traced"]
    assert format(tool_span.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert tool_span.parent is not None and format(tool_span.parent.span_id, "016x") == "b7ad6b7169203331"
    assert spans["storage:set"].parent.span_id == tool_span.context.span_id
    assert SEEN["trace"] == format(tool_span.context.trace_id, "032x")
    assert SEEN["span"] == format(tool_span.context.span_id, "016x")
    assert spans["tool_execution:broken"].status.status_code.name == "ERROR"
    metrics = {m.name: m for rm in reader.get_metrics_data().resource_metrics for sm in rm.scope_metrics
               for m in sm.metrics}
    calls = {tuple(sorted(dp.attributes.items())): dp.value for dp in metrics["mcp.tool.calls"].data.data_points}
    assert calls[(("outcome", "success"), ("tool", "traced"))] == 1
    assert calls[(("outcome", "error"), ("tool", "broken"))] == 1
    assert "mcp.tool.duration" in metrics and "mcp.tool.errors" in metrics
    assert metrics["mcp.sessions.active"].data.data_points[0].value == 3


async def test_trace_context_from_2026_meta() -> None:
    app, exporter, _ = setup()
    async with McpTestClient(app, era="modern") as c:
        await c.request("tools/call", {"name": "traced", "_meta": {"traceparent": PARENT}})
    span = next(s for s in exporter.get_finished_spans() if s.name == "tool_execution:traced")
    assert format(span.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"


async def test_off_by_default() -> None:
    app = McpApp("t", "1", tools=[traced], settings=Settings.from_env({}))
    assert app.telemetry is None
    async with McpTestClient(app) as c:
        await c.call_tool("traced")
    assert SEEN["trace"] is None and SEEN["span"] is None
    assert McpApp("t", "1", settings=Settings.from_env({"OTEL_ENABLED": "true"})).telemetry is not None


async def test_sessions_active_counts_the_memory_store_or_what_this_instance_serves(redis_url: str) -> None:
    """The gauge's source: every session of a memory store; with Redis, the sessions this
    instance has a stream or a request open for (summed over instances, each counted once)."""
    memory = McpApp("t", "1", tools=[traced], settings=Settings.from_env({}))
    await memory.startup()
    try:
        async with McpTestClient(memory), McpTestClient(memory):
            assert memory.stores.sessions_active() == 2
    finally:
        await memory.shutdown()
    shared = McpApp("t", "1", tools=[traced], settings=Settings.from_env(
        {}, session_store="redis", redis_url=redis_url))
    await shared.startup()
    try:
        async with McpTestClient(shared) as c:
            assert shared.stores.sessions_active() == 0  # stored in Redis, nothing open here
            async with c.http.stream("GET", c.url, headers={**c.headers(), "accept": "text/event-stream"}):
                assert shared.stores.sessions_active() == 1
    finally:
        await shared.shutdown()


async def test_event_buffer_gauges_report_the_bytes_held() -> None:
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    app = McpApp("t", "1", tools=[traced], settings=Settings.from_env({}))
    app.telemetry = Telemetry(TracerProvider(), mp, buffer_bytes=app.stores.buffer_bytes)
    assert app.events is not None
    await app.events.append("s1", "A", b"x" * 300)
    await app.events.append("s2", "A", b"y" * 700)
    metrics = {m.name: m for rm in reader.get_metrics_data().resource_metrics for sm in rm.scope_metrics
               for m in sm.metrics}
    assert metrics["mcp.event_buffer.bytes"].data.data_points[0].value == 1000
    assert metrics["mcp.event_buffer.session_bytes.max"].data.data_points[0].value == 700
