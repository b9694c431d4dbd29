"""Middleware and Depends through the official ``mcp`` Python client: HTTP (uvicorn) on both
eras, and stdio; cleanup counted once per call on success and on error."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from mcp import Client, StdioServerParameters

from tests.servers import ROOT, run_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with run_server("tests.apps.layered:app") as url:
        yield url


async def _counts(client: Client) -> dict[str, int]:
    r = await client.call_tool("counts", {})
    out: dict[str, int] = r.structured_content  # type: ignore[assignment]
    return out.get("result", out) if isinstance(out, dict) and "result" in out else out


async def _exercise(client: Client) -> None:
    before = await _counts(client)
    r = await client.call_tool("greet", {"name": "Ada"})
    assert r.content[0].text == "hello Ada (for client)"  # type: ignore[union-attr]
    assert (r.meta or {}).get("example/guarded") is True
    r = await client.call_tool("explode", {})
    assert r.is_error
    r = await client.call_tool("forbidden", {})
    assert r.is_error and "Refused by a layer" in r.content[0].text  # type: ignore[union-attr]
    tools = await client.list_tools()
    greet = next(t for t in tools.tools if t.name == "greet")
    assert set(greet.input_schema["properties"]) == {"name"}  # the dependency is not an argument
    after = await _counts(client)

    def grew(key: str) -> int:
        return after.get(key, 0) - before.get(key, 0)

    assert grew("session.open") == grew("session.close") == 2  # greet and explode, once each
    assert grew("session.saw.RuntimeError") == 1
    assert grew("audit:tools/call") == 4 and grew("audit:tools/list") >= 1  # the client may list on its own too


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_http(server_url: str, mode: str) -> None:
    async with Client(server_url, mode=mode) as client:
        await _exercise(client)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_stdio(mode: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcpcore", "run", "tests.apps.layered:app",
                                                                  "--transport", "stdio"], cwd=str(ROOT))
    async with Client(params, mode=mode) as client:
        await _exercise(client)
