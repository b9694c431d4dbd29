"""examples/stdio_server.py: the official MCP client starts it over stdio; notes persist on disk
across restarts and are listed a page at a time."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mcpcore.lint import lint_app
from tests.servers import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def server(folder: Path, *args: str) -> StdioServerParameters:
    """How a desktop client would start it: ``mcpcore run examples.stdio_server:app``."""
    return StdioServerParameters(command=sys.executable, args=["-m", "mcpcore", "run", "examples.stdio_server:app",
                                                               *args], cwd=str(ROOT),
                                 env={"STORAGE_FILESYSTEM_PATH": str(folder), "MCP_LOG_LEVEL": "warning"})


def text(result: Any) -> str:
    return str(result.content[0].text)


async def test_notes_persist_across_restarts_on_the_filesystem(tmp_path: Path) -> None:
    async with Client(server(tmp_path), mode="legacy") as client:
        for slug in ("groceries", "ideas", "todo"):
            saved = await client.call_tool("save_note", {"slug": slug, "text": f"{slug} text"})
            assert saved.structured_content == {"slug": slug, "text": f"{slug} text"}
        first = await client.call_tool("list_notes", {"limit": 2})
        assert first.structured_content["slugs"] == ["groceries", "ideas"] and first.structured_content["truncated"]
        second = await client.call_tool("list_notes", {"limit": 2, "cursor": first.structured_content["cursor"]})
        assert second.structured_content == {"slugs": ["todo"], "truncated": False, "cursor": None}
        bad = await client.call_tool("save_note", {"slug": "Not A Slug", "text": "x"})
        assert bad.is_error
    assert any(tmp_path.rglob("*.v")), "the notes were not written to STORAGE_FILESYSTEM_PATH"

    async with Client(server(tmp_path), mode="2026-07-28") as client:  # a new process, the same folder
        note = await client.call_tool("read_note", {"slug": "ideas"})
        assert note.structured_content == {"slug": "ideas", "text": "ideas text"}
        resource = await client.read_resource("notes://todo")
        assert resource.contents[0].text == "todo text"  # type: ignore[union-attr]
        listed = await client.list_resources()
        assert {str(r.uri) for r in listed.resources} == {"notes://groceries", "notes://ideas", "notes://todo"}
        assert text(await client.call_tool("delete_note", {"slug": "todo"})) == "deleted todo"
        gone = await client.call_tool("read_note", {"slug": "todo"})
        assert gone.is_error and "list_notes" in text(gone)  # the contract's recovery hint


async def test_the_transport_defaults_to_stdio(tmp_path: Path) -> None:
    # No --transport: the example picks stdio itself.
    async with Client(server(tmp_path), mode="legacy") as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"save_note", "read_note", "list_notes",
                                                                         "delete_note"}


def test_definitions_lint_clean() -> None:
    from examples.stdio_server import app

    report = lint_app(app)
    assert report.passed, report.text()
