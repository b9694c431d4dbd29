"""Decorators: schemas from signatures, descriptions, names, templates, mistakes at definition time."""

from __future__ import annotations

import datetime
import sys
import types
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from mcpcore import ConfigurationError, Context, ErrorContract, McpApp, Settings, prompt, resource, tool
from mcpcore.definitions.schema import args_plan
from mcpcore.definitions.tools import TOOL_ATTR


def test_tool_from_plain_parameters_builds_a_closed_schema_and_keeps_the_function() -> None:
    @tool
    def add(a: int, b: Annotated[int, Field(description="second")] = 2) -> int:
        """Add two numbers."""
        return a + b

    assert add(1, 2) == 3  # still a plain function
    d = getattr(add, TOOL_ATTR)
    assert d.name == "add" and d.description == "Add two numbers."
    assert d.input_schema == {"type": "object", "additionalProperties": False, "required": ["a"], "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer", "default": 2, "description": "second"}}}
    assert d.output_schema == {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}


def test_tool_with_one_model_parameter_and_a_context() -> None:
    class Query(BaseModel):
        text: str = Field(description="what to find")

    class Hits(BaseModel):
        n: int

    @tool(name="find", title="Find things", annotations={"read_only_hint": True, "openWorldHint": False})
    async def f(q: Query, context: Context) -> Hits:
        """Find."""
        return Hits(n=1)

    d = getattr(f, TOOL_ATTR)
    assert d.args.model is Query and d.args.ctx_param == "context"
    assert d.input_schema["properties"] == {"text": {"type": "string", "description": "what to find"}}
    assert d.output_schema == {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    wire = d.to_wire()
    assert wire["title"] == "Find things"
    assert wire["annotations"] == {"readOnlyHint": True, "openWorldHint": False}


@pytest.mark.parametrize("bad", ["", "has space", "x" * 129, "semi;colon", "ünïcode"])
def test_bad_tool_names_are_refused(bad: str) -> None:
    def f() -> None:
        """Doc."""

    with pytest.raises(ConfigurationError, match="tool name"):
        tool(name=bad)(f)


def test_missing_description_is_refused_naming_the_tool() -> None:
    def nodoc() -> None:
        pass

    with pytest.raises(ConfigurationError, match="'nodoc' has no description"):
        tool(nodoc)
    with pytest.raises(ConfigurationError, match="prompt 'nodoc'"):
        prompt(nodoc)


def test_varargs_and_underscore_parameters_are_refused() -> None:
    def f(*args: int) -> None:
        """Doc."""

    with pytest.raises(ConfigurationError, match=r"\*args"):
        tool(f)

    def g(_secret: int) -> None:
        """Doc."""

    with pytest.raises(ConfigurationError, match="reserved"):
        tool(g)


def test_duplicate_names_are_refused_at_registration() -> None:
    def make() -> types.FunctionType:
        def same() -> None:
            """Doc."""
        return tool(same)

    app = McpApp(settings=Settings.from_env({}))
    app.include(make())
    with pytest.raises(ConfigurationError, match="duplicate tool name 'same'"):
        app.include(make())


def test_template_variables_must_be_covered() -> None:
    with pytest.raises(ConfigurationError, match="template variable"):
        @resource("notes://{id}/{rev}")
        def note(id: str) -> str:
            return id

    with pytest.raises(ConfigurationError, match="not in the URI template"):
        @resource("notes://{id}")
        def note2(id: str, other: str) -> str:
            return id

    with pytest.raises(ConfigurationError, match="invalid URI template"):
        @resource("notes://{bad var}")
        def note3() -> str:
            return ""


def test_error_contracts_are_checked() -> None:
    def f() -> None:
        """Doc."""

    with pytest.raises(ConfigurationError, match="snake_case"):
        tool(errors=[ErrorContract("NoMatch", -32001, "x", "y")])(f)
    with pytest.raises(ConfigurationError, match="twice"):
        tool(errors=[ErrorContract("a", -32001, "x", "y"), ErrorContract("a", -32001, "x", "y")])(f)
    with pytest.raises(ConfigurationError, match="recovery"):
        tool(errors=[ErrorContract("a", -32001, "x", " ")])(f)


def test_enrichment_is_folded_into_the_output_schema() -> None:
    class Out(BaseModel):
        items: list[str]

    class Enr(BaseModel):
        totalCount: int

    @tool(enrichment=Enr)
    def s() -> Out:
        """Doc."""
        return Out(items=[])

    d = getattr(s, TOOL_ATTR)
    assert set(d.output_schema["properties"]) == {"items", "totalCount"}
    assert d.output_schema["required"] == ["items", "totalCount"]

    class Clash(BaseModel):
        items: int

    with pytest.raises(ConfigurationError, match="collides"):
        tool(enrichment=Clash)(s.__wrapped__ if hasattr(s, "__wrapped__") else s)


def test_header_parameters_are_marked_and_checked() -> None:
    @tool(header_params={"region": "Region"})
    def h(region: str, n: int = 1) -> str:
        """Doc."""
        return region

    d = getattr(h, TOOL_ATTR)
    assert d.input_schema["properties"]["region"]["x-mcp-header"] == "Region"
    assert d.header_params == {"region": "Region"}

    def bad(items: list[str]) -> str:
        """Doc."""
        return ""

    with pytest.raises(ConfigurationError, match="string, integer or boolean"):
        tool(header_params={"items": "Items"})(bad)
    with pytest.raises(ConfigurationError, match="RFC 9110"):
        tool(header_params={"region": "Bad Name"})(h)


def test_prompt_arguments_are_listed_with_requiredness() -> None:
    @prompt(complete={"lang": lambda v, a: ["python"]})
    def review(code: Annotated[str, Field(description="Code to review")], lang: str = "python") -> str:
        """Review code."""
        return code

    d = review.__mcpcore_prompt__
    assert d.arguments == [{"name": "code", "description": "Code to review", "required": True},
                           {"name": "lang", "required": False}]
    with pytest.raises(ConfigurationError, match="unknown argument"):
        prompt(complete={"nope": lambda v, a: []})(review)


def test_include_collects_every_definition_of_a_module() -> None:
    mod = types.ModuleType("defs_mod")

    @tool
    def t1() -> None:
        """Doc."""

    @prompt
    def p1() -> str:
        """Doc."""
        return "x"

    @resource("x://static")
    def r1() -> str:
        return "x"

    mod.t1, mod.p1, mod.r1, mod.other = t1, p1, r1, 42
    sys.modules["defs_mod"] = mod
    app = McpApp(settings=Settings.from_env({})).include(mod)
    assert list(app.registry.tools) == ["t1"] and list(app.registry.prompts) == ["p1"]
    assert list(app.registry.resources) == ["x://static"]
    with pytest.raises(ConfigurationError, match="not a tool"):
        app.include(42)


def test_app_decorators_register_directly() -> None:
    app = McpApp(settings=Settings.from_env({}))

    @app.tool
    def one() -> str:
        """Doc."""
        return "1"

    @app.tool(name="two")
    def second() -> str:
        """Doc."""
        return "2"

    @app.prompt
    def p() -> str:
        """Doc."""
        return "p"

    @app.resource("r://{id}")
    def r(id: str) -> str:
        return id

    assert set(app.registry.tools) == {"one", "two"}
    assert "p" in app.registry.prompts and app.registry.templates[0].uri == "r://{id}"


def _typed_params(text: str, n: Annotated[int, Field(ge=0)] = 3, tags: list[str] | None = None,
                  when: datetime.date | None = None, mode: Literal["a", "b"] = "a") -> None: ...


@pytest.mark.parametrize("args", [
    {"text": "x"}, {"text": "x", "n": "4"}, {"text": "x", "n": -1}, {}, {"text": 1}, {"text": "x", "tags": ["a", 2]},
    {"text": "x", "when": "2026-11-30"}, {"text": "x", "when": "nope"}, {"text": "x", "mode": "c"},
    {"text": "x", "zzz": 1}, [], None, "text",
])
def test_signature_validation_matches_the_synthesised_model(args: Any) -> None:
    plan = args_plan(_typed_params, "tool:t", model_name="T")
    assert plan.fields_only  # the fast path is the one exercised
    try:
        expected: Any = dict(plan.model.__pydantic_validator__.validate_python(args).__dict__)
    except ValidationError as exc:
        expected = [e["loc"] for e in exc.errors()]
    try:
        got: Any = plan.kwargs(plan.validate(args))
    except ValidationError as exc:
        got = [e["loc"] for e in exc.errors()]
    assert got == expected
