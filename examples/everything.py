"""The example server: every tool, resource and prompt the official conformance suites name,
plus recipes from the Context guide (enrichment, content, error contracts).

    make run                                   # http://127.0.0.1:8000/mcp
    mcpcore run examples.everything:app --transport stdio
"""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import sys
import wave
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from mcpcore import (
    AudioContent,
    Context,
    EmbeddedResource,
    ErrorContract,
    ImageContent,
    JsonRpcErrorCode,
    McpApp,
    McpError,
    PromptMessage,
    Resource,
    TextContent,
    TextResourceContents,
    prompt,
    resource,
    tool,
)

# A 1x1 red PNG and a short silent WAV clip.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def _wav() -> str:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(struct.pack("<h", 0) * 80)
    return base64.b64encode(buf.getvalue()).decode()


WAV = _wav()


# -- tools the 2025 conformance suite calls --------------------------------------------------

@tool
def test_simple_text() -> TextContent:
    """Return a simple text block."""
    return TextContent(text="This is a simple text response for testing.")


@tool
def test_image_content() -> ImageContent:
    """Return a small PNG image."""
    return ImageContent(data=PNG, mimeType="image/png")


@tool
def test_audio_content() -> AudioContent:
    """Return a short WAV audio clip."""
    return AudioContent(data=WAV, mimeType="audio/wav")


@tool
def test_embedded_resource() -> EmbeddedResource:
    """Return an embedded text resource."""
    return EmbeddedResource(resource=TextResourceContents(
        uri="test://embedded-resource", mimeType="text/plain", text="This is an embedded resource content."))


@tool
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Return text, an image and an embedded resource together."""
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=PNG, mimeType="image/png"),
        EmbeddedResource(resource=TextResourceContents(
            uri="test://mixed-content-resource", mimeType="application/json", text='{"test": "data", "value": 123}')),
    ]


@tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Log three messages, about 50 ms apart, while running."""
    ctx.log.info("Tool execution started")
    await asyncio.sleep(0.05)
    ctx.log.info("Tool processing data")
    await asyncio.sleep(0.05)
    ctx.log.info("Tool execution completed")
    return "Tool with logging executed successfully"


@tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 out of 100."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"step {step}")
        if step < 100:
            await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


@tool
def test_error_handling() -> str:
    """Always fail, to show how a tool error reaches the client."""
    raise McpError(JsonRpcErrorCode.InternalError, "This tool intentionally returns an error for testing")


class address(BaseModel):
    street: str | None = None
    city: str | None = None


AddressModel = address


class SchemaInput(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"})
    name: str | None = None
    address: AddressModel | None = None


@tool(name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features")
def json_schema_tool(args: SchemaInput) -> str:
    return f"Hello {args.name or 'anonymous'}"


# -- resources ----------------------------------------------------------------------------------

@resource("test://static-text", name="static_text", mime_type="text/plain", description="A static text resource")
def static_text() -> str:
    return "This is the content of the static text resource."


@resource("test://static-binary", name="static_binary", mime_type="image/png", description="A static PNG image")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@resource("test://template/{id}/data", name="template_data", mime_type="application/json",
          description="Data for one item, by id", complete={"id": lambda value, _args: [
              i for i in ("1", "2", "3", "123") if i.startswith(value)]})
def template_data(id: Annotated[str, Field(description="Item id")]) -> dict[str, object]:
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


WATCHED = {"version": 1}


@resource("test://watched-resource", name="watched_resource", mime_type="text/plain",
          description="A resource clients can subscribe to")
def watched_resource() -> str:
    return f"Watched resource content, version {WATCHED['version']}"


@tool(annotations={"idempotent_hint": False})
def update_watched_resource(ctx: Context) -> str:
    """Change test://watched-resource and notify its subscribers."""
    WATCHED["version"] += 1
    ctx.notify_resource_updated("test://watched-resource")
    return f"version {WATCHED['version']}"


# -- prompts ------------------------------------------------------------------------------------

@prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@prompt(complete={"arg1": lambda value, _args: [v for v in ("paris", "park", "party", "test") if v.startswith(value)]})
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> str:
    """A prompt that uses its two arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@prompt
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[PromptMessage]:
    """A prompt that embeds a resource."""
    return [
        PromptMessage(role="user", content=EmbeddedResource(resource=TextResourceContents(
            uri=resourceUri, mimeType="text/plain", text="Embedded resource content for testing."))),
        PromptMessage(role="user", content=TextContent(text="Please process the embedded resource above.")),
    ]


@prompt
def test_prompt_with_image() -> list[PromptMessage]:
    """A prompt that carries an image."""
    return [
        PromptMessage(role="user", content=ImageContent(data=PNG, mimeType="image/png")),
        PromptMessage(role="user", content=TextContent(text="Please analyze the image above.")),
    ]


# -- recipes from the Context guide -----------------------------------------------------------

CATALOG = ["red widget", "blue widget", "green gadget", "red gadget", "yellow sprocket"]


class SearchResult(BaseModel):
    items: list[str] = Field(description="Matching catalog items")


class SearchEnrichment(BaseModel):
    effectiveQuery: str = Field(description="The query as the server parsed it")
    totalCount: int = Field(description="Total matches before the limit")
    notice: str | None = Field(default=None, description="Guidance when nothing matched")


@tool(enrichment=SearchEnrichment, annotations={"read_only_hint": True})
def search(
    query: Annotated[str, Field(description="Search terms, e.g. 'red widget'")],
    limit: Annotated[int, Field(ge=1, le=50, description="Most items to return")] = 10,
    ctx: Context = None,  # type: ignore[assignment]
) -> SearchResult:
    """Search the catalog by words; reports the parsed query and the total."""
    words = query.lower().split()
    hits = [c for c in CATALOG if all(w in c for w in words)]
    ctx.enrich.echo(" ".join(words))
    ctx.enrich.total(len(hits))
    if not hits:
        ctx.enrich.notice(f'No matches for "{query}". Try fewer words.')
    return SearchResult(items=hits[:limit])


class ChartResult(BaseModel):
    points: int = Field(description="Number of points plotted")


@tool
def render_chart(series: Annotated[list[float], Field(description="Data points")], ctx: Context) -> ChartResult:
    """Render a chart of a series; the image is returned as content, the summary as data."""
    ctx.content.image(PNG, "image/png")
    return ChartResult(points=len(series))


class Items(BaseModel):
    items: list[str] = Field(description="Resolved items")


QUEUE = {"depth": 0, "capacity": 8}


@tool(errors=[
    ErrorContract(reason="no_match", code=JsonRpcErrorCode.NotFound, when="No items matched",
                  recovery="Broaden the query or check the spelling and try again."),
    ErrorContract(reason="queue_full", code=JsonRpcErrorCode.RateLimited, when="Local queue at capacity",
                  recovery="Wait a few seconds before retrying or reduce the batch size.", retryable=True),
])
def fetch_items(ids: Annotated[list[str], Field(description="Item ids, e.g. ['1', '2']")], ctx: Context) -> Items:
    """Fetch catalog items by id (numbers 1-5)."""
    if len(ids) > QUEUE["capacity"]:
        raise ctx.fail("queue_full")
    found = [CATALOG[int(i) - 1] for i in ids if i.isdigit() and 1 <= int(i) <= len(CATALOG)]
    if not found:
        raise ctx.fail("no_match", f"No items match {len(ids)} ids", {"ids": ids})
    return Items(items=found)


@resource("catalog://items/{index}", name="catalog_item", mime_type="text/plain", description="One catalog item",
          list=lambda: [Resource(uri=f"catalog://items/{i}", name=f"item {i}") for i in range(1, len(CATALOG) + 1)])
def catalog_item(index: int) -> str:
    if not 1 <= index <= len(CATALOG):
        raise McpError(JsonRpcErrorCode.InvalidParams, f"No catalog item {index}", {"uri": f"catalog://items/{index}"})
    return CATALOG[index - 1]


app = McpApp(
    "mcpcore-everything",
    "1.0.0",
    instructions="A test server exposing every feature the MCP conformance suites check.",
)
app.include(sys.modules[__name__])
