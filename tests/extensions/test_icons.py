"""Icons on resources and resource templates, as on tools (2025-11-25 ``Icon`` objects)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore import ConfigurationError, McpApp, Resource, resource

from ..connect import Connect

pytestmark = pytest.mark.anyio

ICON = {"src": "https://example.com/note.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light"}
DARK = {"src": "data:image/svg+xml;base64,PHN2Zy8+", "theme": "dark"}


@resource("notes://readme", name="readme", mime_type="text/markdown", description="The notes readme.",
          icons=[ICON])
def readme() -> str:
    return "# Notes"


@resource("notes://{id}", name="note", mime_type="text/plain", description="One note by id.", icons=[ICON, DARK],
          list=lambda: [Resource(uri="notes://1", name="note 1"),
                        Resource(uri="notes://2", name="note 2", icons=[DARK])])
def note(id: str) -> str:
    return f"note {id}"


async def test_icons_on_resources_templates_and_their_entries(connect: Connect) -> None:
    async with connect(McpApp("icons", "1.0", resources=[readme, note])) as c:
        listed = {r["uri"]: r for r in (await c.request("resources/list"))["resources"]}
        assert listed["notes://readme"]["icons"] == [ICON]
        assert listed["notes://1"]["icons"] == [ICON, DARK]
        assert listed["notes://2"]["icons"] == [DARK]
        (template,) = (await c.request("resources/templates/list"))["resourceTemplates"]
        assert template["icons"] == [ICON, DARK]


def test_no_icons_means_no_key() -> None:
    @resource("plain://x", name="plain", mime_type="text/plain", description="A plain resource.")
    def plain() -> str:
        return "x"

    definition: Any = plain.__mcpcore_resource__  # type: ignore[attr-defined]
    assert "icons" not in definition.listing()


@pytest.mark.parametrize("icons", [[{"mimeType": "image/png"}], [{"src": "icon.png"}], [{"src": "https://x/i.png",
                                   "sizes": "48x48"}], [{"src": "https://x/i.png", "theme": "blue"}], ["https://x"]])
def test_malformed_icons_are_refused(icons: list[Any]) -> None:
    with pytest.raises(ConfigurationError):
        @resource("bad://x", icons=icons)
        def bad() -> str:
            return "x"
