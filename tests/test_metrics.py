"""``/metrics``: the Prometheus text format (read with prometheus-client's own parser), off by
default, behind the side routes' guard, what it counts, and one sum over ``--workers 2``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcpcore import Context, McpApp, McpError, Settings, TaskSupport, prompt, resource, tool
from mcpcore.middleware import RateLimit
from mcpcore.testing import McpTestClient
from tests.processes import call_tool, mcpcore_run

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@tool
async def fine(n: int) -> int:
    """Answer ``n`` doubled."""
    return 2 * n


@tool
async def broken() -> str:
    """Always fails."""
    raise McpError(-32050, "upstream down")


@tool(task=TaskSupport("optional"))
async def slowly(ctx: Context) -> str:
    """A short task."""
    await asyncio.sleep(0.05)
    return "done"


@resource("memo://today", name="today")
async def today() -> str:
    """Today's memo."""
    return "nothing"


@prompt
async def greet(name: str) -> str:
    """Say hello."""
    return f"Hello {name}"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``{(sample name, sorted labels): value}`` of a scrape, parsed by prometheus-client."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(scrape: dict[tuple[str, tuple[tuple[str, str], ...]], float], sample: str, **labels: str) -> float:
    return scrape.get((sample, tuple(sorted(labels.items()))), 0.0)


def metered_app(**settings: Any) -> McpApp:
    return McpApp("metered", "1.0", tools=[fine, broken, slowly], resources=[today], prompts=[greet],
                  middleware=[RateLimit(3, per=60, methods=["prompts/get"], name="prompts")],
                  settings=Settings.from_env({"MCP_METRICS_ENABLED": "true", "MCP_HTTP_MAX_BODY_BYTES": "4096",
                                              **settings}))


async def scrape(c: McpTestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = await c.http.get("http://127.0.0.1:8000/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=")
    return samples(r.text)


@pytest.mark.anyio
async def test_calls_errors_refusals_tasks_and_sessions_are_counted() -> None:
    app = metered_app()
    await app.startup()
    try:
        async with McpTestClient(app) as legacy, McpTestClient(app, era="modern", capabilities=TASKS) as c:
            before = await scrape(c)
            for n in range(3):
                assert (await c.call_tool("fine", {"n": n}))["content"][0]["text"] == str(2 * n)
            assert (await c.call_tool("broken"))["isError"] is True
            assert (await c.call_tool("fine", {"n": "x"}))["isError"] is True
            with pytest.raises(McpError):
                await c.call_tool("nope")
            await c.read_resource("memo://today")
            for _ in range(4):
                try:
                    await c.get_prompt("greet", {"name": "Ada"})
                except McpError as exc:
                    assert exc.code == -32029 or exc.data.get("reason") == "rate_limited"
            big = await c.post({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"pad": "x" * 5000}})
            assert big.status_code == 413
            created = await c.call_tool("slowly")
            for _ in range(100):
                if (await c.request("tasks/get", {"taskId": created["taskId"]}))["status"] == "completed":
                    break
                await asyncio.sleep(0.02)
            await legacy.list_tools()
            after = await scrape(c)
    finally:
        await app.shutdown()

    def delta(sample: str, **labels: str) -> float:
        return value(after, sample, **labels) - value(before, sample, **labels)

    assert delta("mcp_calls_total", kind="tool", name="fine", outcome="success") == 3
    assert delta("mcp_calls_total", kind="tool", name="broken", outcome="error") == 1
    assert delta("mcp_call_duration_seconds_count", kind="tool", name="fine") == 3
    assert delta("mcp_call_duration_seconds_bucket", kind="tool", name="fine", le="+Inf") == 3
    assert delta("mcp_calls_total", kind="resource", name="today", outcome="success") == 1
    assert delta("mcp_calls_total", kind="prompt", name="greet", outcome="success") == 3
    assert delta("mcp_errors_total", code="-32050") == 1  # the tool's own error result
    assert delta("mcp_errors_total", code="-32602") >= 2  # bad arguments, an unknown tool
    assert delta("mcp_rate_limited_total", limiter="prompts") == 1
    assert delta("mcp_http_ceiling_hits_total", ceiling="body_size") == 1
    assert delta("mcp_task_transitions_total", status="working") == 1
    assert delta("mcp_task_transitions_total", status="completed") == 1
    assert value(after, "mcp_sessions") == 1  # the 2025-era client's session
    assert ("mcp_event_buffer_bytes", ()) in after and ("mcp_tasks_running", ()) in after


@pytest.mark.anyio
async def test_off_by_default_and_behind_the_side_routes_guard() -> None:
    off = McpApp("t", "1", tools=[fine], settings=Settings.from_env({}))
    assert off.metrics is None and off.dispatcher.telemetry is None  # nothing on the call path
    async with McpTestClient(off, initialize=False) as c:
        assert (await c.http.get("http://127.0.0.1:8000/metrics")).status_code == 404
    app = McpApp("t", "1", tools=[fine], settings=Settings.from_env({
        "MCP_METRICS_ENABLED": "true", "MCP_METRICS_PATH": "/internal/metrics/", "MCP_ALLOWED_HOSTS": "mcp.internal"}))
    assert app.side_routes()["/internal/metrics"].startswith("Prometheus metrics")
    async with McpTestClient(app, initialize=False, url="http://mcp.internal/mcp") as c:
        assert (await c.http.get("http://mcp.internal/internal/metrics")).status_code == 200
        head = await c.http.head("http://mcp.internal/internal/metrics")
        assert head.status_code == 200 and head.content == b""
        assert (await c.http.post("http://mcp.internal/internal/metrics")).status_code == 405
        assert (await c.http.get("http://evil.example/internal/metrics")).status_code == 403


@pytest.mark.slow
def test_two_workers_answer_one_sum() -> None:
    env = {"MCP_METRICS_ENABLED": "true"}
    with mcpcore_run("tests.apps.logged:app", "--workers", "2", env=env) as (base, logged):
        calls = 0
        deadline = time.monotonic() + 60
        while calls < 20 or len({r["pid"] for r in logged.records() if r.get("logger") == "mcpcore.handler"}) < 2:
            assert time.monotonic() < deadline, "the calls reached one worker only"
            calls += 1
            assert call_tool(base, "shout", {"text": "hi"}, calls).status_code == 200
        for _ in range(6):  # each scrape lands on either worker: every one reads both workers' counts
            with httpx.Client(timeout=10) as client:
                r = client.get(base + "/metrics")
            assert r.status_code == 200
            got = samples(r.text)
            assert value(got, "mcp_calls_total", kind="tool", name="shout", outcome="success") == calls
            assert value(got, "mcp_call_duration_seconds_count", kind="tool", name="shout") == calls


@pytest.mark.anyio
async def test_an_observed_call_asks_for_input_and_runs_dependencies_as_an_unobserved_one() -> None:
    from tests.conftest import example_app

    accept = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
    app = example_app(request_state_key="k" * 32, metrics_enabled=True)
    async with McpTestClient(app, era="modern", capabilities={"elicitation": {}}) as c:
        before = samples((await c.http.get("http://127.0.0.1:8000/metrics")).text)
        asked = await c.call_tool("test_input_required_result_elicitation")
        assert asked["resultType"] == "input_required"
        done = await c.call_tool("test_input_required_result_elicitation", inputResponses=accept)
        assert done["content"][0]["text"] == "Hello, Ada!"
        after = samples((await c.http.get("http://127.0.0.1:8000/metrics")).text)
    labels = {"kind": "tool", "name": "test_input_required_result_elicitation", "outcome": "success"}
    assert value(after, "mcp_calls_total", **labels) - value(before, "mcp_calls_total", **labels) == 2
