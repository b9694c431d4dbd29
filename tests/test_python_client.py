"""The official `mcp` Python client (2.x, handshake mode) against the example server,
over HTTP (a real uvicorn) and over stdio."""

from __future__ import annotations

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
