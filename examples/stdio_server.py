"""A small notes server for stdio clients (desktop apps and IDEs that start the server themselves).

Notes live in ``ctx.state`` on the filesystem provider, so they survive restarts: in the folder
``STORAGE_FILESYSTEM_PATH`` when it is set, else in a temporary folder removed at exit. The
transport defaults to stdio (``MCP_TRANSPORT_TYPE`` still wins).

    mcpcore run examples.stdio_server:app                       # stdio
    STORAGE_FILESYSTEM_PATH=~/.notes mcpcore run examples.stdio_server:app
    python -m examples.stdio_server

A client configuration (Claude Desktop and most others use this shape)::

    {"mcpServers": {"notes": {"command": "mcpcore", "args": ["run", "examples.stdio_server:app"],
                              "env": {"STORAGE_FILESYSTEM_PATH": "/home/me/.notes"}}}}
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Annotated

from pydantic import BaseModel, Field

from mcpcore import Context, ErrorContract, JsonRpcErrorCode, McpApp, Resource, Settings, resource, tool

Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$",
                            description="Short lowercase name of the note, e.g. 'shopping-list'")]

NOTE_ERRORS = [
    ErrorContract(reason="unknown_note", code=JsonRpcErrorCode.NotFound, when="No note has this name",
                  recovery="Call list_notes to see the names that exist, then try again."),
]


class Note(BaseModel):
    slug: str = Field(description="Name of the note")
    text: str = Field(description="Content of the note")


class NotePage(BaseModel):
    slugs: list[str] = Field(description="Names of the notes on this page, in alphabetical order")
    truncated: bool = Field(description="True when more notes follow this page")
    cursor: str | None = Field(default=None, description="Pass to list_notes for the next page; absent on the last")


@tool(annotations={"idempotent_hint": True})
async def save_note(slug: Slug, text: Annotated[str, Field(max_length=20_000, description="Content of the note")],
                    ctx: Context) -> Note:
    """Create or replace a note."""
    note = Note(slug=slug, text=text)
    await ctx.state.set(f"notes/{slug}", note)
    ctx.log.info("note saved", slug=slug, size=len(text))
    return note


@tool(annotations={"read_only_hint": True}, errors=NOTE_ERRORS)
async def read_note(slug: Slug, ctx: Context) -> Note:
    """Read one note."""
    note = await ctx.state.get(f"notes/{slug}", Note)
    if note is None:
        raise ctx.fail("unknown_note", f"No note named {slug!r}.")
    return note


@tool(annotations={"read_only_hint": True})
async def list_notes(
    ctx: Context,
    cursor: Annotated[str | None, Field(description="The cursor of the previous page, if any")] = None,
    limit: Annotated[int, Field(ge=1, le=100, description="Most names per page")] = 20,
) -> NotePage:
    """List note names a page at a time."""
    page = await ctx.state.list("notes/", cursor=cursor, limit=limit)
    return NotePage(slugs=[item.key.removeprefix("notes/") for item in page.items], truncated=page.cursor is not None,
                    cursor=page.cursor)


@tool(annotations={"destructive_hint": True, "idempotent_hint": True}, errors=NOTE_ERRORS)
async def delete_note(slug: Slug, ctx: Context) -> str:
    """Delete a note for good."""
    if not await ctx.state.delete(f"notes/{slug}"):
        raise ctx.fail("unknown_note", f"No note named {slug!r}.")
    ctx.notify_resource_updated(f"notes://{slug}")
    return f"deleted {slug}"


async def _note_resources(ctx: Context) -> list[Resource]:
    """The first 100 notes, as the concrete resources of ``resources/list``."""
    page = await ctx.state.list("notes/", limit=100)
    return [Resource(uri=f"notes://{slug}", name=slug, mime_type="text/plain")
            for slug in (item.key.removeprefix("notes/") for item in page.items)]


@resource("notes://{slug}", name="note", mime_type="text/plain", errors=NOTE_ERRORS,
          description="The text of one note", list=_note_resources)
async def note_resource(slug: Slug, ctx: Context) -> str:
    note = await ctx.state.get(f"notes/{slug}", Note)
    if note is None:
        raise ctx.fail("unknown_note", f"No note named {slug!r}.")
    return note.text


def _settings() -> Settings:
    """The environment's settings, defaulting to stdio and to files in a temporary folder."""
    settings = Settings.from_env()
    if not os.environ.get("MCP_TRANSPORT_TYPE"):
        settings = settings.replace(transport="stdio")
    if not os.environ.get("STORAGE_PROVIDER_TYPE"):
        path = os.environ.get("STORAGE_FILESYSTEM_PATH")
        if not path:
            path = tempfile.mkdtemp(prefix="mcpcore-notes-")
            atexit.register(shutil.rmtree, path, True)
        settings = settings.replace(storage_provider="filesystem", storage_path=path)
    return settings


app = McpApp("notes", "1.0.0", tools=[save_note, read_note, list_notes, delete_note], resources=[note_resource],
             settings=_settings(), instructions="Notes kept on disk; names are short lowercase slugs.")

if __name__ == "__main__":
    app.run()
