"""The example server: every tool, resource and prompt the official conformance suites name,
plus recipes from the Context guide (enrichment, content, error contracts).

    make run                                   # http://127.0.0.1:8000/mcp
    mcpcore run examples.everything:app --transport stdio
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import hashlib
import io
import logging
import os
import re
import secrets
import shutil
import struct
import sys
import tempfile
import uuid
import wave
from pathlib import Path
from typing import Annotated, Literal

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
    Settings,
    TextContent,
    TextResourceContents,
    input_required,
    prompt,
    resource,
    tool,
)
from mcpcore.extensions import App, Csp
from mcpcore.lint import lint_ignore

from . import task_tools

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


class Address(BaseModel):
    street: str | None = None
    city: str | None = None


class ContactInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    address: Address | None = None
    contactMethod: Literal["phone", "email"] | None = None
    phone: str | None = None
    email: str | None = None


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@lint_ignore("schema-anyof-needs-type", "input-field-description",
             reason="the conformance suite checks this hand-written 2020-12 schema as it is")
@tool(name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features",
      input_schema=JSON_SCHEMA_2020_12)
def json_schema_tool(args: ContactInput) -> str:
    if not (args.phone or args.email):
        raise McpError(JsonRpcErrorCode.InvalidParams, "Give a phone number or an email address.")
    return f"Hello {args.name or 'anonymous'}"


# -- tools the 2026-07-28 suite calls -----------------------------------------------------------

@tool
def test_missing_capability(ctx: Context) -> str:
    """Ask the client's model a question; a request without the sampling capability is refused (-32021)."""
    view = ctx.inputs.view("answer")
    if view.kind == "sampling":
        return f"The model answered: {_sampled_text(view.result)}"
    return ctx.request_input({"answer": input_required.create_message("Say hello.", max_tokens=20)})


@tool
async def test_logging_tool(ctx: Context) -> str:
    """Log three lines; they reach the client only when the request opted in with a log level."""
    for i in range(3):
        ctx.log.info(f"log line {i + 1}")
        await asyncio.sleep(0.01)
    return "Logged three lines"


@tool
def test_trigger_tool_change(ctx: Context) -> str:
    """Announce that the tool list changed (to every listen stream that asked)."""
    ctx.notify_tool_list_changed()
    return "tools/list_changed sent"


@tool
def test_trigger_prompt_change(ctx: Context) -> str:
    """Announce that the prompt list changed (to every listen stream that asked)."""
    ctx.notify_prompt_list_changed()
    return "prompts/list_changed sent"


@tool
def test_trigger_resource_change(ctx: Context) -> str:
    """Announce that the resource list changed (to every listen stream that asked)."""
    ctx.notify_resource_list_changed()
    return "resources/list_changed sent"


@tool(header_params={"region": "Region"})
def test_x_mcp_header(
    region: Annotated[str, Field(description="Deployment region, mirrored in the Mcp-Param-Region header")],
    query: Annotated[str, Field(description="What to look up")] = "status",
) -> str:
    """Look something up in a region; the region travels in an HTTP header too (2026-07-28)."""
    return f"{query} in {region}"



# -- asking the client (2025: real server-to-client requests; 2026: input_required) ------------

def _sampled_text(result: dict[str, object]) -> str:
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    return " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")


class Profile(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


@tool
def test_sampling(prompt: Annotated[str, Field(description="The prompt to send to the LLM")], ctx: Context) -> str:
    """Ask the client's model to answer a prompt."""
    view = ctx.inputs.view("reply")
    if view.kind == "sampling":
        return f"LLM response: {_sampled_text(view.result)}"
    return ctx.request_input({"reply": input_required.create_message(prompt, max_tokens=100)})


@tool
def test_elicitation(message: Annotated[str, Field(description="The message to show the user")],
                     ctx: Context) -> str:
    """Ask the user for a username and an email address."""
    view = ctx.inputs.view("profile")
    if view.kind == "elicit":
        return f"User response: action={view.action}, content={view.content}"
    return ctx.request_input({"profile": input_required.elicit(message, Profile)})


class Defaults(BaseModel):
    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


@tool
def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicit a form whose every field has a default value."""
    view = ctx.inputs.view("form")
    if view.kind == "elicit":
        return f"Elicitation completed: action={view.action}, content={view.content}"
    return ctx.request_input({"form": input_required.elicit("Please review your details.", Defaults)})


ENUM_FORM = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                     {"const": "value2", "title": "Second Option"},
                                                     {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                             {"const": "value2", "title": "Second Choice"},
                                                             {"const": "value3", "title": "Third Choice"}]}},
    },
}


@tool
def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicit a form with every kind of enum field."""
    view = ctx.inputs.view("choices")
    if view.kind == "elicit":
        return f"Elicitation completed: action={view.action}, content={view.content}"
    return ctx.request_input({"choices": input_required.elicit("Pick some options.", ENUM_FORM)})


class Name(BaseModel):
    name: str


class Ok(BaseModel):
    ok: bool


class Color(BaseModel):
    color: str


class PromptContext(BaseModel):
    context: str


@tool
def test_input_required_result_elicitation(ctx: Context) -> str:
    """Ask for the user's name, then greet them."""
    answer = ctx.inputs.accepted("user_name", Name)
    if answer is None:
        return ctx.request_input({"user_name": input_required.elicit("What is your name?", Name)})
    return f"Hello, {answer.name}!"


@tool
def test_input_required_result_sampling(ctx: Context) -> str:
    """Ask the client's model for the capital of France."""
    view = ctx.inputs.view("capital_question")
    if view.kind != "sampling":
        return ctx.request_input({"capital_question": input_required.create_message(
            "What is the capital of France?", max_tokens=100)})
    return f"The model said: {_sampled_text(view.result)}"


@tool
def test_input_required_result_list_roots(ctx: Context) -> str:
    """Ask for the client's roots and list them."""
    view = ctx.inputs.view("client_roots")
    if view.kind != "roots":
        return ctx.request_input({"client_roots": input_required.list_roots()})
    return "Roots: " + ", ".join(str(r.get("uri")) for r in view.roots)


@tool
def test_input_required_result_request_state(ctx: Context) -> str:
    """Ask for confirmation and carry state across the round."""
    answer = ctx.inputs.accepted("confirm", Ok)
    if answer is None or ctx.inputs.state() != "confirm-round-1":
        return ctx.request_input({"confirm": input_required.elicit("Please confirm", Ok)},
                                 request_state="confirm-round-1")
    return f"state-ok: confirmed={answer.ok}"


@tool
def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Ask for a name, a generated greeting and the roots in one round."""
    name = ctx.inputs.accepted("user_name", Name)
    greeting = ctx.inputs.view("greeting")
    roots = ctx.inputs.view("client_roots")
    if name is None or greeting.kind != "sampling" or roots.kind != "roots":
        return ctx.request_input({
            "user_name": input_required.elicit("What is your name?", Name),
            "greeting": input_required.create_message("Generate a greeting", max_tokens=50),
            "client_roots": input_required.list_roots(),
        }, request_state="multi-1")
    return f"{_sampled_text(greeting.result)} {name.name} ({len(roots.roots)} roots)"


@tool
def test_input_required_result_multi_round(ctx: Context) -> str:
    """Three rounds: a name, then a favourite colour, then the answer."""
    state = ctx.inputs.state()
    name = ctx.inputs.accepted("step1", Name)
    if state is None or not state.startswith("round-"):
        return ctx.request_input({"step1": input_required.elicit("Step 1: What is your name?", Name)},
                                 request_state="round-1")
    if state == "round-1":
        if name is None:
            return ctx.request_input({"step1": input_required.elicit("Step 1: What is your name?", Name)},
                                     request_state="round-1")
        return ctx.request_input({"step2": input_required.elicit("Step 2: What is your favorite color?", Color)},
                                 request_state=f"round-2:{name.name}")
    color = ctx.inputs.accepted("step2", Color)
    if color is None:
        return ctx.request_input({"step2": input_required.elicit("Step 2: What is your favorite color?", Color)},
                                 request_state=state)
    return f"{state.split(':', 1)[1]} likes {color.color}"


@tool
def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Carry integrity-protected state; a tampered state is refused before this runs."""
    answer = ctx.inputs.accepted("confirm", Ok)
    if answer is None or ctx.inputs.state() != "tamper-proof":
        return ctx.request_input({"confirm": input_required.elicit("Please confirm", Ok)},
                                 request_state="tamper-proof")
    return "state verified"


@tool
def test_input_required_result_capabilities(ctx: Context) -> str:
    """Ask only for what the client declared it can answer."""
    caps = ctx.client_capabilities or {}
    answers = {k: ctx.inputs.view(k).kind for k in ("name", "model", "roots")}
    wanted = {}
    if "elicitation" in caps and answers["name"] == "missing":
        wanted["name"] = input_required.elicit("What is your name?", Name)
    if "sampling" in caps and answers["model"] == "missing":
        wanted["model"] = input_required.create_message("Say hi.", max_tokens=10)
    if "roots" in caps and answers["roots"] == "missing":
        wanted["roots"] = input_required.list_roots()
    if wanted:
        return ctx.request_input(wanted)
    return f"answered: {sorted(k for k, v in answers.items() if v != 'missing')}"


@tool
def test_streaming_elicitation(ctx: Context) -> str:
    """Ask for a name; on 2026-07-28 the answer is an input_required result, never a request."""
    answer = ctx.inputs.accepted("user_name", Name)
    if answer is None:
        return ctx.request_input({"user_name": input_required.elicit("What is your name?", Name)})
    return f"Hello, {answer.name}!"


@prompt
def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user what context to use."""
    answer = ctx.inputs.accepted("user_context", PromptContext)
    if answer is None:
        return ctx.request_input({"user_context": input_required.elicit("What context should the prompt use?",
                                                                        PromptContext)})
    return f"Use this context: {answer.context}"


# -- asking with await: one handler for both eras (docs/asking-the-caller.md) -------------------

@tool
async def test_awaited_questions(ctx: Context) -> str:
    """Ask for a name, the model's greeting and the client's roots, one await after another."""
    name = await ctx.elicit("What is your name?", Name)
    greeting = await ctx.sample("Generate a greeting", max_tokens=50)
    roots = await ctx.list_roots()
    who = name.data.name if name.data is not None else "nobody"
    return f"{greeting.text} {who} ({len(roots)} roots)"


class Stats(BaseModel):
    items: int = Field(description="Number of catalog items")
    caller: str = Field(description="Client id of the caller, or 'anonymous' without auth")


@tool(auth=["catalog:admin"], annotations={"read_only_hint": True})
def catalog_stats(ctx: Context) -> Stats:
    """Report catalog statistics; with auth on, the caller needs the catalog:admin scope."""
    return Stats(items=len(CATALOG), caller=ctx.auth.client_id if ctx.auth else "anonymous")


# -- consent gates (the Context guide's recipes, with an atomic take) --------------------------

def _sandbox() -> Path:
    configured = os.environ.get("MCP_EXAMPLE_SANDBOX")
    if configured:
        return Path(configured).resolve()
    made = Path(tempfile.mkdtemp(prefix="mcpcore-sandbox-")).resolve()
    atexit.register(shutil.rmtree, made, True)
    return made


SANDBOX = _sandbox()
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _in_sandbox(path: str) -> Path:
    target = (SANDBOX / path).resolve()
    if target == SANDBOX or SANDBOX not in target.parents:
        raise McpError(JsonRpcErrorCode.Forbidden, f"{path!r} is outside the sandbox.", {"reason": "outside_sandbox"})
    if not target.exists():
        raise McpError(JsonRpcErrorCode.NotFound, f"{path!r} does not exist.", {"reason": "not_found"})
    return target


def _content_hash(target: Path) -> str:
    digest = hashlib.sha256()
    if target.is_dir():
        for child in sorted(target.rglob("*")):
            digest.update(str(child.relative_to(target)).encode())
            if child.is_file():
                digest.update(child.read_bytes())
    else:
        digest.update(target.read_bytes())
    return digest.hexdigest()


class Confirm(BaseModel):
    confirm: bool = Field(description="Whether to proceed with the deletion.")


class Consent(BaseModel):
    operation: str = Field(description="Tool the record was minted for")
    client_id: str = Field(description="Authenticated client that was asked; empty without auth")
    subject: str = Field(description="Authenticated subject that was asked; empty without auth")
    target: str = Field(description="Path the user confirmed")
    content_hash: str = Field(description="Hash of what the path held when the user confirmed")


class Deleted(BaseModel):
    deleted: str = Field(description="The path that was deleted")


SANDBOX_ERRORS = [
    ErrorContract(reason="outside_sandbox", code=JsonRpcErrorCode.Forbidden, when="The path leaves the sandbox",
                  recovery="Give a path relative to the sandbox root, without '..' segments or a leading '/'."),
    ErrorContract(reason="not_found", code=JsonRpcErrorCode.NotFound, when="Nothing exists at the path",
                  recovery="Check the spelling of the path; it is relative to the sandbox root."),
]


@tool(annotations={"destructive_hint": True, "idempotent_hint": False}, errors=SANDBOX_ERRORS)
async def delete_path(path: Annotated[str, Field(description="Path inside the sandbox, e.g. 'notes/old.txt'")],
                      ctx: Context) -> Deleted:
    """Delete a file or folder in the sandbox after the user confirms it."""
    # 1. Redeem first, atomically: whatever this round carries, the record is spent now, and of
    #    any number of concurrent retries carrying the same id exactly one gets it.
    record_id = ctx.inputs.state()
    record = await ctx.state.take(f"consent/{record_id}", Consent) if record_id and _UUID.match(record_id) else None

    # 2. What this call would confirm: this operation, this caller, this target as it is now.
    target = _in_sandbox(path)
    expected = Consent(operation="delete_path", client_id=ctx.auth.client_id if ctx.auth else "",
                       subject=(ctx.auth.subject or "") if ctx.auth else "", target=str(target),
                       content_hash=await asyncio.to_thread(_content_hash, target))
    matches = record == expected

    # 3. Only a matching record makes the answer on ctx.inputs mean anything.
    view = ctx.inputs.view("confirm")
    if matches and view.kind == "elicit" and view.action != "accept":
        raise McpError(JsonRpcErrorCode.ValidationError, f"The user chose {view.action!r} on the deletion prompt.")
    answer = ctx.inputs.accepted("confirm", Confirm) if matches else None

    # 4. No matching record, or no answer: ask again, with a fresh record.
    if answer is None:
        fresh = str(uuid.uuid4())
        await ctx.state.set(f"consent/{fresh}", expected, ttl=600)
        return ctx.request_input({"confirm": input_required.elicit(f"Delete {path}?", Confirm)}, request_state=fresh)
    if not answer.confirm:
        raise McpError(JsonRpcErrorCode.ValidationError, "Deletion not confirmed.")
    await asyncio.to_thread(shutil.rmtree if target.is_dir() else os.remove, target)
    return Deleted(deleted=path)


class Format(BaseModel):
    format: Literal["json", "csv"] = Field(description="Export format")


class Export(BaseModel):
    url: str = Field(description="Download URL")


@tool
def export_report(
    report_id: Annotated[str, Field(description="Report to export, e.g. 'q3-sales'")],
    format: Annotated[Literal["json", "csv"] | None, Field(description="Export format; asked for when omitted")] = None,
    ctx: Context = None,  # type: ignore[assignment]
) -> Export:
    """Export a report, asking for the format when the caller left it out."""
    view = ctx.inputs.view("format")
    if view.kind == "elicit" and view.action != "accept":
        raise McpError(JsonRpcErrorCode.ValidationError, f"The user chose {view.action!r} on the format prompt.")
    chosen = format or (answer.format if (answer := ctx.inputs.accepted("format", Format)) else None)
    if chosen is None:
        return ctx.request_input({"format": input_required.elicit("Which format?", Format)},
                                 fallback_hint="Or call again with format supplied.")
    return Export(url=f"https://reports.example.com/{report_id}.{chosen}")

# -- resources ----------------------------------------------------------------------------------

@resource("test://static-text", name="static_text", mime_type="text/plain", description="A static text resource")
def static_text() -> str:
    return "This is the content of the static text resource."


@resource("test://static-binary", name="static_binary", mime_type="image/png", description="A static PNG image")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@lint_ignore("resource-template-list", reason="any id is served; there is no list of them to give")
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


CATALOG_VIEW = App(
    file=Path(__file__).parent / "apps" / "catalog.html",
    csp=Csp(resource_domains=["https://fonts.googleapis.com", "https://fonts.gstatic.com"]),
    prefers_border=True,
    fallback=lambda data: "Catalog: " + ", ".join(data["items"]) if data and data["items"] else "No item matches.",
    title="Catalog view",
)


@tool(app=CATALOG_VIEW, annotations={"read_only_hint": True})
def show_catalog(
    color: Annotated[str | None, Field(description="Only items of this color, e.g. 'red'; all items when absent")]
    = None,
) -> Items:
    """Show the catalog as an interactive list (an MCP App view); hosts without MCP Apps get the items as text."""
    return Items(items=[item for item in CATALOG if color is None or item.startswith(color + " ")])


@resource("catalog://items/{index}", name="catalog_item", mime_type="text/plain", description="One catalog item",
          list=lambda: [Resource(uri=f"catalog://items/{i}", name=f"item {i}") for i in range(1, len(CATALOG) + 1)])
def catalog_item(index: int) -> str:
    if not 1 <= index <= len(CATALOG):
        raise McpError(JsonRpcErrorCode.InvalidParams, f"No catalog item {index}", {"uri": f"catalog://items/{index}"})
    return CATALOG[index - 1]


def _settings() -> Settings:
    settings = Settings.from_env()
    if settings.request_state_key is None:
        # One process only: a random key seals request state for this process's lifetime. Every
        # instance behind a load balancer needs the same MCP_REQUEST_STATE_KEY instead.
        settings = settings.replace(request_state_key=secrets.token_urlsafe(48))
    return settings


async def _announce(app: McpApp) -> None:
    logging.getLogger("mcpcore.example").info("delete_path works inside the sandbox %s", SANDBOX)


app = McpApp(
    "mcpcore-everything",
    "1.0.0",
    instructions="A test server exposing every feature the MCP conformance suites check.",
    settings=_settings(),
    setup=_announce,
    skills=Path(__file__).parent / "skills",
)
app.include(sys.modules[__name__], task_tools)
