"""The 2024-11-05 HTTP+SSE transport: off by default, served beside /mcp when enabled."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from .servers import run_server
from .test_python_client import CALLBACKS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with run_server(env={"MCP_HTTP_LEGACY_SSE": "true"}) as url:
        yield url.rsplit("/mcp", 1)[0]


async def test_python_client_over_http_sse(base: str) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(sse_client(f"{base}/sse"), mode="legacy", **CALLBACKS) as client:
        assert {t.name for t in (await client.list_tools()).tools} >= {"search", "test_elicitation"}
        r = await client.call_tool("search", {"query": "gadget"})
        assert r.structured_content["totalCount"] == 2  # type: ignore[index]
        r = await client.call_tool("test_elicitation", {"message": "who?"})
        assert "action=accept" in r.content[0].text  # type: ignore[union-attr]
        await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        assert progress == [0, 50, 100]


async def test_unknown_connection_and_bad_bodies(base: str) -> None:
    async with httpx.AsyncClient() as http:
        r = await http.post(f"{base}/messages?session_id=nope", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert r.status_code == 404
        r = await http.get(f"{base}/sse", headers={"accept": "application/json"})
        assert r.status_code == 406


def test_off_by_default() -> None:
    with run_server() as url:
        r = httpx.get(url.rsplit("/mcp", 1)[0] + "/sse", headers={"accept": "text/event-stream"})
        assert r.status_code == 404


