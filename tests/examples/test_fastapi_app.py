"""examples/fastapi_app.py: REST routes and the mounted MCP server share one service, under real
uvicorn with the official MCP client, and in process."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from mcp import Client

from mcpcore.lint import lint_app
from mcpcore.testing import McpTestClient

from .conftest import run_uvicorn

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with run_uvicorn("examples.fastapi_app:app") as base:
        yield base


@pytest.mark.slow
async def test_rest_and_mcp_share_the_list_under_uvicorn(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as rest:
        assert (await rest.get("/health")).json() == {"status": "ok"}
        created = (await rest.post("/todos", json={"title": "water the plants"})).json()

        async with Client(f"{base_url}/mcp/", mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"add_todo", "list_todos", "complete_todo"}
            listed = await client.call_tool("list_todos", {})
            todos = listed.structured_content["todos"]
            assert {"id": created["id"], "title": "water the plants", "done": False} in todos
            added = await client.call_tool("add_todo", {"title": "write the report"})
            new_id = added.structured_content["id"]
            done = await client.call_tool("complete_todo", {"todo_id": new_id})
            assert done.structured_content == {"id": new_id, "title": "write the report", "done": True}
            missing = await client.call_tool("complete_todo", {"todo_id": 999})
            assert missing.is_error

        async with Client(f"{base_url}/mcp/", mode="2026-07-28") as modern:
            listed = await modern.call_tool("list_todos", {})
            assert listed.structured_content["open"] == 1

        todos = (await rest.get("/todos")).json()
        assert {"id": new_id, "title": "write the report", "done": True} in todos
        assert (await rest.post("/todos/999/done")).status_code == 404


@pytest.mark.slow
async def test_the_mount_point_and_the_landing_page(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        assert (await http.get("/mcp/healthz")).json() == {"status": "ok"}
        assert (await http.get("/mcp/readyz")).status_code == 200
        assert (await http.get("/mcp/")).status_code in (400, 405, 406)  # the endpoint, not a landing page
        assert (await http.get("/docs")).status_code == 200  # FastAPI's own routes are untouched


async def test_in_process_with_the_hosts_lifespan() -> None:
    from examples.fastapi_app import app, mcp

    async with app.router.lifespan_context(app):
        assert mcp.started
        async with McpTestClient(app, url="http://127.0.0.1:8000/mcp/", era="modern") as client:
            result = await client.call_tool("add_todo", {"title": "in process"})
            assert result["structuredContent"]["title"] == "in process"
            rest = await client.http.get("http://127.0.0.1:8000/todos")
            assert any(t["title"] == "in process" for t in rest.json())
    assert not mcp.started


def test_definitions_lint_clean() -> None:
    from examples.fastapi_app import mcp

    report = lint_app(mcp)
    assert report.passed, report.text()
