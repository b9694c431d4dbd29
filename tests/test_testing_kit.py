"""The testing kit: run_tool_contract, the pytest fixtures, mock contexts."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore import AuthInfo, McpApp, Settings
from mcpcore.testing import McpTestClient, run_tool_contract, tool_error

from .conftest import example_app

pytestmark = pytest.mark.anyio


@pytest.fixture
def mcp_app() -> McpApp:
    return example_app()


async def test_run_tool_contract_gives_the_production_shapes() -> None:
    from examples.everything import catalog_stats, export_report, fetch_items, search

    r = await run_tool_contract(search, {"query": "red"})
    assert r["structuredContent"] == {"items": ["red widget", "red gadget"], "effectiveQuery": "red", "totalCount": 2}
    r = await run_tool_contract(fetch_items, {"ids": ["42"]})
    assert r["isError"] and tool_error(r)["data"]["recovery"]["hint"].startswith("Broaden")
    r = await run_tool_contract(search, {"nope": 1})
    assert r["isError"] and tool_error(r)["data"]["reason"] == "invalid_arguments"
    r = await run_tool_contract(export_report, {"report_id": "q3"}, client_capabilities={"elicitation": {}},
                                modern=True)
    assert r["resultType"] == "input_required"
    r = await run_tool_contract(export_report, {"report_id": "q3"}, client_capabilities={"elicitation": {}},
                                input_responses={"format": {"action": "accept", "content": {"format": "csv"}}})
    assert r["structuredContent"] == {"url": "https://reports.example.com/q3.csv"}
    r = await run_tool_contract(export_report, {"report_id": "q3"}, modern=True)
    assert r["error"]["code"] == -32021
    r = await run_tool_contract(catalog_stats, auth=AuthInfo(client_id="c", scopes=("x",)))
    assert r["error"]["code"] == -32005
    r = await run_tool_contract(catalog_stats, auth=AuthInfo(client_id="c", scopes=("catalog:admin",)))
    assert r["structuredContent"]["caller"] == "c"
    with pytest.raises(TypeError):
        await run_tool_contract(lambda: None)


async def test_plugin_fixtures(mcp_client: McpTestClient, mcp_modern_client: McpTestClient, mock_ctx: Any) -> None:
    assert mcp_client.session_id and (await mcp_client.list_tools())
    assert (await mcp_modern_client.request("server/discover"))["supportedVersions"][:2] == ["2026-07-28", "2025-11-25"]
    await mock_ctx.state.set("a", 1)
    assert await mock_ctx.state.get("a") == 1


def test_settings_are_isolated_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SESSION_MODE", "stateless")
    assert Settings.from_env({}).session_mode is None
    assert Settings.from_env().session_mode == "stateless"
