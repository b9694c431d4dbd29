"""Declaring extensions (both eras) and asking what the caller declared."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore import ConfigurationError, Context, McpApp, tool
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio

AUDIT = "com.example/audit"


@tool
def declared(ctx: Context) -> dict[str, Any]:
    """Report what the caller declared for the audit extension."""
    return {"audit": ctx.client_extension(AUDIT), "all": sorted(ctx.client_extensions)}


def _app() -> McpApp:
    return McpApp("ext", "1.0", tools=[declared], extensions={AUDIT: {"level": 2}, "com.example/empty": {}})


async def test_declared_extensions_appear_in_initialize_and_discover() -> None:
    async with McpTestClient(_app()) as c:
        caps = c.init_result["capabilities"] if c.init_result else {}
        assert caps["extensions"] == {AUDIT: {"level": 2}, "com.example/empty": {}}
    async with McpTestClient(_app(), era="modern") as c:
        caps = (await c.request("server/discover"))["capabilities"]
        assert caps["extensions"] == {AUDIT: {"level": 2}, "com.example/empty": {}}


async def test_no_extensions_declared_means_no_key() -> None:
    async with McpTestClient(McpApp("plain", "1.0", tools=[declared])) as c:
        assert "extensions" not in (c.init_result or {})["capabilities"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_handler_sees_what_the_caller_declared(era: str) -> None:
    caps = {"extensions": {AUDIT: {"mode": "full"}, "com.example/bad": True}}
    async with McpTestClient(_app(), era=era, capabilities=caps) as c:
        r = await c.request("tools/call", {"name": "declared", "arguments": {}})
        assert r["structuredContent"] == {"audit": {"mode": "full"}, "all": [AUDIT]}
    async with McpTestClient(_app(), era=era) as c:
        r = await c.request("tools/call", {"name": "declared", "arguments": {}})
        assert r["structuredContent"] == {"audit": None, "all": []}


@pytest.mark.parametrize("bad", [{"noprefix": {}}, {"com.example/x": 3}, {"/x": {}}])
def test_malformed_declarations_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        McpApp("bad", "1.0", extensions=bad)
