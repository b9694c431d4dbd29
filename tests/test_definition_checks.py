"""Definition mistakes that used to pass silently are refused when the decorator runs, each with
the definition, the parameter and the fix in one line (issue 33)."""

import enum
import logging
import subprocess
import sys
from typing import Annotated, Any, Literal

import fastapi
import pytest
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import HTTPConnection, Request
from starlette.websockets import WebSocket

from mcpcore import ConfigurationError, Depends, McpApp, Settings, prompt, resource, tool
from mcpcore.definitions.tools import TOOL_ATTR
from mcpcore.testing import McpTestClient, tool_error

pytestmark = pytest.mark.anyio


def refused(build: Any) -> str:
    with pytest.raises(ConfigurationError) as info:
        build()
    text = str(info.value)
    assert "\n" not in text
    return text


# -- methods -----------------------------------------------------------------------------------------

def test_a_method_decorated_in_its_class_body_is_refused_for_every_kind() -> None:
    def tool_method() -> None:
        class Weather:
            @tool
            def forecast(self, city: str) -> str:
                """Forecast the weather in a city."""
                return city

    def prompt_method() -> None:
        class Prompts:
            @prompt
            def brief(self, topic: str) -> str:
                """Write a brief."""
                return topic

    def resource_classmethod() -> None:
        class Notes:
            @resource("notes://{note_id}")
            def note(cls, note_id: str) -> str:
                return note_id

    message = refused(tool_method)
    assert message.startswith("tool 'forecast': parameter 'self' is the first parameter of a method")
    assert "tool(obj.forecast)" in message
    assert "prompt(obj.brief)" in refused(prompt_method)
    assert "resource 'notes://{note_id}': parameter 'cls'" in refused(resource_classmethod)


async def test_a_bound_method_registers_as_a_tool_without_self() -> None:
    class Weather:
        def __init__(self, sky: str) -> None:
            self.sky = sky

        def forecast(self, city: Annotated[str, Field(description="City name")]) -> str:
            """Forecast the weather in a city."""
            return f"{self.sky} in {city}"

        def outlook(self, days: int) -> str:
            """Outlook for the next days."""
            return f"{self.sky} for {days} days"

    weather = Weather("sunny")
    app = McpApp("t", "1", tools=[tool(weather.forecast)], settings=Settings.from_env({}))
    app.tool(weather.outlook)
    assert getattr(tool(weather.forecast), TOOL_ATTR).input_schema["required"] == ["city"]
    async with app.lifespan(), McpTestClient(app) as client:
        assert (await client.call_tool("forecast", {"city": "Porto"}))["structuredContent"] == {
            "result": "sunny in Porto"}
        assert (await client.call_tool("outlook", {"days": 3}))["content"][0]["text"] == "sunny for 3 days"


# -- other frameworks' markers and objects ------------------------------------------------------------

def get_db() -> str:
    return "db"


def test_fastapi_markers_are_refused_with_mcpcores_own_way() -> None:
    def depends_default() -> None:
        @tool
        def count(db: str = fastapi.Depends(get_db)) -> int:
            """Count rows."""
            return len(db)

    def depends_annotated() -> None:
        @tool
        def count(db: Annotated[str, fastapi.Depends(get_db)]) -> int:
            """Count rows."""
            return len(db)

    def query_default() -> None:
        @tool
        def search(limit: int = fastapi.Query(10)) -> int:
            """Search rows."""
            return limit

    for build in (depends_default, depends_annotated):
        message = refused(build)
        assert message.startswith("tool 'count': parameter 'db' is marked fastapi.Depends, which mcpcore does not run")
        assert "mcpcore.Depends(provider)" in message
    message = refused(query_default)
    assert "parameter 'limit' is marked fastapi.Query" in message and "Field(description=...)" in message

    @tool
    def fine(db: Annotated[str, Depends(get_db)]) -> int:  # mcpcore's own marker
        """Count rows."""
        return len(db)


def test_detecting_markers_does_not_import_fastapi() -> None:
    code = "import sys, mcpcore, mcpcore.definitions.checks; assert 'fastapi' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize("framework_type", [Request, WebSocket, HTTPConnection, fastapi.Request])
def test_http_objects_point_at_ctx_http(framework_type: type) -> None:
    def build() -> None:
        @tool
        def whoami(request: framework_type) -> str:  # type: ignore[valid-type]
            """Who is calling."""
            return "me"

    message = refused(build)
    assert message.startswith("tool 'whoami': parameter 'request' is a starlette.")
    assert "ctx.http.headers" in message and "arbitrary_types_allowed" not in message


def test_another_frameworks_context_is_refused() -> None:
    FastMcpContext = type("Context", (), {"__module__": "fastmcp.server.context"})

    def build() -> None:
        @tool
        def ping(ctx: FastMcpContext) -> str:  # type: ignore[valid-type]
            """Ping."""
            return "pong"

    assert "parameter 'ctx' is annotated fastmcp.server.context.Context" in refused(build)


# -- annotations --------------------------------------------------------------------------------------

def test_unannotated_parameters_are_refused_and_any_opts_out() -> None:
    def untyped() -> None:
        @tool
        def scale(value, factor: float = 2.0) -> float:  # type: ignore[no-untyped-def]
            """Scale a value."""
            return float(value) * factor

    def untyped_default() -> None:
        @tool
        def page(limit=10) -> int:  # type: ignore[no-untyped-def]
            """One page."""
            return int(limit)

    message = refused(untyped)
    assert message.startswith("tool 'scale': parameter 'value' has no type annotation")
    assert "value: Any to accept any JSON value" in message
    assert "parameter 'limit' has no type annotation" in refused(untyped_default)

    @tool
    def echo(value: Any) -> str:
        """Echo any JSON value."""
        return repr(value)

    assert getattr(echo, TOOL_ATTR).input_schema["properties"] == {"value": {}}


@pytest.mark.parametrize("name", ["ctx", "context"])
def test_an_unannotated_ctx_names_the_context(name: str) -> None:
    namespace: dict[str, Any] = {"tool": tool}
    source = f"@tool\ndef status(query: str, {name}) -> str:\n    'Status of a query.'\n    return query\n"
    message = refused(lambda: exec(source, namespace))
    assert message == (f"tool 'status': parameter '{name}' has no annotation, so it would be an input the client "
                       f"fills instead of the request's Context; annotate it: {name}: Context (from mcpcore import "
                       "Context)")

    @tool
    def status(query: str, context: str) -> str:  # a typed input that happens to be called context
        """Status of a query."""
        return query + context

    assert set(getattr(status, TOOL_ATTR).input_schema["properties"]) == {"query", "context"}


# -- prompts --------------------------------------------------------------------------------------------

class Filters(BaseModel):
    color: str


class Tone(enum.Enum):
    DRY = "dry"
    WARM = "warm"


@pytest.mark.parametrize(("annotation", "shown"), [
    (dict[str, str], "dict[str, str]"), (list[str], "list[str]"), (Filters, "Filters"),
    (dict[str, str] | None, "dict[str, str] | None"),
])
def test_prompt_arguments_a_string_cannot_carry_are_refused(annotation: Any, shown: str) -> None:
    def build() -> None:
        @prompt
        def summarize(text: str, filters: annotation) -> str:  # type: ignore[valid-type]
            """Summarize a text."""
            return text

    message = refused(build)
    assert message.startswith(f"prompt 'summarize': argument 'filters' is {shown}, which a prompt cannot take: "
                              "clients send prompt arguments as strings")
    assert message.endswith("take a str (for structured input, JSON text the prompt parses, or one string argument "
                            "per field)")


def test_prompt_arguments_a_string_can_carry_are_fine() -> None:
    @prompt
    def review(code: str, depth: int, strict: bool, tone: Tone, style: Literal["short", "long"] = "short",
               note: str | None = None) -> str:
        """Review some code."""
        return code

    class Args(BaseModel):
        nested: dict[str, int]

    def model_with_a_map() -> None:
        @prompt
        def shaped(args: Args) -> str:
            """A prompt taking one model."""
            return "x"

    assert "argument 'nested' is dict[str, int]" in refused(model_with_a_map)


# -- options and types ----------------------------------------------------------------------------------

def test_unknown_decorator_options_name_the_definition_and_the_closest_option() -> None:
    def misspelled_tool() -> None:
        @tool(descripton="Forecast.")
        def forecast() -> str:
            return "sun"

    def misspelled_prompt() -> None:
        @prompt(titel="Brief")
        def brief() -> str:
            """A brief."""
            return "b"

    def misspelled_resource() -> None:
        @resource("notes://readme", mime_typ="text/plain")
        def readme() -> str:
            return "r"

    app = McpApp("t", "1", settings=Settings.from_env({}))

    message = refused(misspelled_tool)
    assert message.startswith("tool 'forecast': unknown option 'descripton'; did you mean 'description'? @tool takes ")
    assert "build_tool" not in message
    assert "did you mean 'title'?" in refused(misspelled_prompt)
    assert "resource 'notes://readme': unknown option 'mime_typ'; did you mean 'mime_type'?" in refused(
        misspelled_resource)
    assert "tool 'named': unknown option 'annotation'; did you mean 'annotations'?" in refused(
        lambda: app.tool(name="named", annotation={})(misspelled_tool))
    assert "unknown option 'whatever'; @tool takes" in refused(lambda: tool(whatever=1)(misspelled_tool))
    assert "unknown option 'read_only_hint'; did you mean annotations={'read_only_hint': True}?" in refused(
        lambda: tool(read_only_hint=True)(misspelled_tool))


class Socketish:
    """No JSON Schema, no validator."""


class LooseModel(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    label: str
    handle: Socketish


def test_an_unsupported_input_type_names_the_tool_and_the_parameter() -> None:
    def plain() -> None:
        @tool
        def connect(host: str, sock: Socketish) -> str:
            """Connect."""
            return host

    def in_a_model() -> None:
        @tool
        def connect(spec: LooseModel) -> str:
            """Connect."""
            return spec.label

    message = refused(plain)
    assert message.startswith("tool 'connect': parameter 'sock' has a type that cannot be an input (")
    assert "Socketish" in message and "arbitrary_types_allowed" not in message
    message = refused(in_a_model)
    assert message.startswith("tool 'connect': parameter 'spec.handle' has a type that cannot be an input (")


# -- output that breaks the return type -------------------------------------------------------------------

class Price(BaseModel):
    amount: float = Field(description="Amount")


class Quote(BaseModel):
    prices: list[Price] = Field(description="Prices")


async def test_output_not_matching_the_return_type_logs_the_tool_and_the_field_path(
        caplog: pytest.LogCaptureFixture) -> None:
    @tool
    async def quote(item: str) -> Quote:
        """Quote an item."""
        return {"prices": [{"amount": 1.5}, {"amount": "cheap"}]}  # type: ignore[return-value]

    app = McpApp("t", "1", tools=[quote], settings=Settings.from_env({}))
    with caplog.at_level(logging.INFO, logger="mcpcore.server"):
        async with app.lifespan(), McpTestClient(app) as client:
            result = await client.call_tool("quote", {"item": "tea"})
    sentence = "Tool 'quote' returned output that does not match its declared return type."
    assert result["isError"] and tool_error(result)["message"] == sentence
    assert "prices.1.amount" not in str(result)  # the client gets the sentence only
    (record,) = [r for r in caplog.records if r.name == "mcpcore.server" and r.levelno == logging.ERROR]
    assert record.getMessage().startswith("Error in tool:quote (prices.1.amount: Input should be a valid number")
    assert record.fields["issues"][0]["path"] == "prices.1.amount"  # type: ignore[attr-defined]
    assert "cheap" not in record.getMessage()
