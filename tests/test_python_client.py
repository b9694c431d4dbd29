"""The official `mcp` Python client (2.x, handshake mode) against the example server,
over HTTP (a real uvicorn) and over stdio."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from .servers import ROOT, run_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with run_server() as url:
        yield url


async def _exercise(client: Client) -> None:
    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    assert {"test_simple_text", "search", "fetch_items"} <= names
    (fetch,) = [t for t in tools.tools if t.name == "fetch_items"]  # the error contract, in the tool's _meta
    assert [(e["reason"], e["code"]) for e in (fetch.meta or {})["dev.mcpcore/errors"]] == [
        ("no_match", -32001), ("queue_full", -32003)]
    r = await client.call_tool("search", {"query": "red"})
    assert r.structured_content == {"items": ["red widget", "red gadget"], "effectiveQuery": "red", "totalCount": 2}
    r = await client.call_tool("test_error_handling", {})
    assert r.is_error
    res = await client.read_resource("test://template/7/data")
    assert '"id":"7"' in res.contents[0].text  # type: ignore[union-attr]
    p = await client.get_prompt("test_prompt_with_arguments", {"arg1": "x", "arg2": "y"})
    assert "arg1='x'" in p.messages[0].content.text  # type: ignore[union-attr]
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
    assert progress == [0, 50, 100]


async def test_http_legacy_session(server_url: str) -> None:
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    async with Client(server_url, mode="legacy", logging_callback=on_log) as client:
        assert client.protocol_version == "2025-11-25"
        await _exercise(client)
        await client.set_logging_level("debug")
        await client.call_tool("test_tool_with_logging", {})
        assert [entry.data["message"] for entry in logs] == [
            "Tool execution started", "Tool processing data", "Tool execution completed"]


async def test_stdio_legacy() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcpcore", "run", "examples.everything:app",
                                                                  "--transport", "stdio"], cwd=str(ROOT),
                                   env={"MCP_LOG_LEVEL": "info"})
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    async with Client(params, mode="legacy", logging_callback=on_log) as client:
        await _exercise(client)
        await client.set_logging_level("info")
        await client.call_tool("test_tool_with_logging", {})
        assert len(logs) == 3


# -- asking the client, and the 2026-07-28 revision ---------------------------------------------

async def _elicit(context: Any, params: Any) -> Any:
    from mcp import types

    props = params.requested_schema.get("properties", {}) if hasattr(params, "requested_schema") else {}
    content = {k: True if v.get("type") == "boolean" else "Ada" for k, v in props.items()}
    return types.ElicitResult(action="accept", content=content)


async def _sample(context: Any, params: Any) -> Any:
    from mcp import types

    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="Paris"),
                                     model="test-model")


async def _roots(context: Any) -> Any:
    from mcp import types

    return types.ListRootsResult(roots=[types.Root(uri="file:///home/ada", name="home")])


CALLBACKS: dict[str, Any] = {"elicitation_callback": _elicit, "sampling_callback": _sample,
                             "list_roots_callback": _roots}


async def _ask_everything(client: Client) -> None:
    r = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
    assert r.content[0].text == "LLM response: Paris"  # type: ignore[union-attr]
    r = await client.call_tool("test_input_required_result_multi_round", {})
    assert r.content[0].text == "Ada likes Ada"  # type: ignore[union-attr]
    r = await client.call_tool("test_input_required_result_multiple_inputs", {})
    assert r.content[0].text == "Paris Ada (1 roots)"  # type: ignore[union-attr]
    p = await client.get_prompt("test_input_required_result_prompt", {})
    assert p.messages[0].content.text == "Use this context: Ada"  # type: ignore[union-attr]
    r = await client.call_tool("test_awaited_questions", {})  # await ctx.elicit / sample / list_roots
    assert r.content[0].text == "Paris Ada (1 roots)"  # type: ignore[union-attr]


async def test_http_multi_round_on_a_2025_session(server_url: str) -> None:
    async with Client(server_url, mode="legacy", **CALLBACKS) as client:
        await _ask_everything(client)


async def test_http_multi_round_and_listen_on_2026(server_url: str) -> None:
    async with Client(server_url, mode="2026-07-28", **CALLBACKS) as client:
        assert client.protocol_version == "2026-07-28"
        await _exercise(client)
        await _ask_everything(client)
        async with client.listen(tools_list_changed=True) as sub:
            assert sub.honored.tools_list_changed  # type: ignore[attr-defined]
            await client.call_tool("test_trigger_tool_change", {})
            event = await asyncio.wait_for(sub.__anext__(), 10)
            assert "tool" in type(event).__name__.lower()


async def test_auto_mode_discovers_the_modern_revision(server_url: str) -> None:
    async with Client(server_url, **CALLBACKS) as client:
        assert client.protocol_version == "2026-07-28"
        r = await client.call_tool("search", {"query": "widget"})
        assert r.structured_content["totalCount"] == 2  # type: ignore[index]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_stdio_multi_round(mode: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcpcore", "run", "examples.everything:app",
                                                                  "--transport", "stdio"], cwd=str(ROOT))
    async with Client(params, mode=mode, **CALLBACKS) as client:
        await _ask_everything(client)
