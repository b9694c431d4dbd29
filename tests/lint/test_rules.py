"""Every rule finds its mistake once in the broken fixture, and nothing in clean definitions."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from mcpcore import Context, ErrorContract, JsonRpcErrorCode, McpApp, Resource, Settings, prompt, resource, tool
from mcpcore.definitions.tools import TOOL_ATTR, ToolDefinition
from mcpcore.lint import RULES, Finding, LintReport, lint_app, lint_definitions
from mcpcore.lint.enrichment import is_cap_name
from mcpcore.lint.schemas import undescribed_fields
from mcpcore.lint.text import description_problem
from tests.lint import broken_defs, clean_defs

NOT_IN_APP = {"name-unique", "schema-no-defs"}  # impossible in a registry / strict-only

# The definition each rule must fire on in broken_defs.app.
EXPECTED = {
    "description-required": "resource:notes_changelog",
    "description-specific": "tool:placeholder_description",
    "name-format": "tool:greet someone",
    "name-collision": "tool:getUserProfile",
    "tool-name-portable": "tool:users.lookup",
    "schema-serializable": "tool:scale_series",
    "schema-format-portability": "tool:fetch_page",
    "schema-no-discriminator-keyword": "tool:adopt_pet",
    "schema-anyof-needs-type": "tool:store_extra",
    "schema-dialect-tag": "tool:legacy_search",
    "input-field-description": "tool:undescribed_input",
    "output-field-description": "tool:forecast",
    "error-reason-format": "tool:greet_with_contracts",
    "error-reason-unique": "tool:greet_with_contracts",
    "error-reason-consistent": "tool:probe_upstream",
    "error-when-required": "tool:greet_with_contracts",
    "error-recovery-min-words": "tool:edit_record",
    "error-code-reserved": "tool:spend_quota",
    "fail-without-contract": "tool:cancel_order",
    "enrichment-field-description": "tool:find_names",
    "enrichment-trailer-unknown-field": "tool:count_names",
    "enrichment-trailer-render": "tool:facet_names",
    "capped-list-no-truncation": "tool:list_names",
    "format-parity": "tool:show_person",
    "format-parity-threw": "tool:first_two_names",
    "format-parity-depth-limit": "tool:deep_tree",
    "annotation-coherence": "tool:purge_cache",
    "signature-mistake": "tool:weather_forecast",
    "prompt-argument-type": "prompt:brief_filtered",
    "dependency-in-schema": "tool:sum_account",
    "visibility-covers-auth": "tool:rebuild_reports",
    "resource-name-not-uri": "resource:status.example.com",
    "resource-mime-type": "resource:notes_readme",
    "resource-template-list": "resource:note",
    "app-text-fallback": "tool:chart_total",
    "app-resource-not-found": "tool:show_map",
    "app-csp-malformed": "tool:live_feed",
    "prompt-argument-description": "prompt:summarize",
    "lint-ignore-stale": "tool:stale_suppression",
    "openapi-skipped": "tool:inventory_ping",
}

LINE = re.compile(r"^(error|warning) [a-z0-9-]+ (tool|resource|prompt):[^:]+: .+ \(fix: .+\)$")


def where(report: LintReport) -> dict[str, str]:
    return {f.rule: f"{f.kind}:{f.name}" for f in report.findings}


def test_expected_covers_the_whole_catalog() -> None:
    assert set(EXPECTED) | NOT_IN_APP == set(RULES)


def test_broken_app_yields_exactly_one_finding_per_rule() -> None:
    report = lint_app(broken_defs.app)
    assert Counter(report.rule_ids) == Counter(set(EXPECTED)), report.text()
    assert where(report) == EXPECTED
    assert not report.passed


def test_name_unique_fires_when_linting_definitions_directly() -> None:
    tools = [*broken_defs.app.registry.tools.values(), broken_defs.DUPLICATE_NAME]
    report = lint_definitions(tools=tools)
    assert Counter(r for r in report.rule_ids if r == "name-unique") == {"name-unique": 1}
    (dup,) = [f for f in report.findings if f.rule == "name-unique"]
    assert (dup.kind, dup.name) == ("tool", "get_user_profile")


def test_strict_portability_adds_only_the_strict_rules() -> None:
    standard = Counter(lint_app(broken_defs.app).rule_ids)
    strict = lint_app(broken_defs.app, portability="strict")
    assert Counter(strict.rule_ids) - standard == {"schema-no-defs": 1}
    assert where(strict)["schema-no-defs"] == "tool:adopt_pet"
    assert strict.portability == "strict"


def test_severities_follow_the_catalog_except_optional_resource_descriptions() -> None:
    for f in lint_app(broken_defs.app).findings:
        expected = "warning" if f.rule == "description-required" else RULES[f.rule].severity
        assert f.severity == expected, f


def test_every_finding_is_one_line_with_a_concrete_fix() -> None:
    for f in lint_app(broken_defs.app, portability="strict").findings:
        assert LINE.match(f.line()), f.line()
        assert f.message and f.fix and "\n" not in f.line()


def test_clean_definitions_have_no_findings() -> None:
    report = lint_app(clean_defs.app)
    assert report.findings == [], report.text()
    assert report.passed and report.definitions == 11


def test_clean_definitions_in_strict_mode_only_report_references() -> None:
    report = lint_app(clean_defs.app, portability="strict")
    assert where(report) == {"schema-no-defs": "tool:show_board"}


def test_example_server_lints_clean() -> None:
    """The conformance fixtures that must keep their shape are silenced with a reason."""
    import examples.everything as everything

    report = lint_app(everything.app)
    assert report.passed and report.findings == [], report.text()
    assert {f.rule for f in report.suppressed} == {"schema-anyof-needs-type", "input-field-description",
                                                   "resource-template-list"}


def test_report_shapes() -> None:
    report = lint_app(broken_defs.app)
    data = report.to_json()
    assert data["passed"] is False
    assert data["counts"] == {"error": len(report.errors), "warning": len(report.warnings), "suppressed": 0}
    assert data["findings"][0].keys() == {"rule", "severity", "kind", "name", "message", "fix"}
    assert report.text().count("\n") == len(report.findings) - 1
    assert "15 error(s), 25 warning(s) in 42 definition(s)" in report.summary()


def test_lint_app_accepts_a_registry_and_refuses_other_things() -> None:
    assert lint_app(clean_defs.app.registry).passed
    with pytest.raises(TypeError):
        lint_app(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        lint_app(clean_defs.app, portability="lenient")  # type: ignore[arg-type]


def test_lint_definitions_takes_decorated_functions_and_modules() -> None:
    assert lint_definitions(tools=[clean_defs.show_board, clean_defs.search_docs]).definitions == 2
    report = lint_definitions(tools=[clean_defs])
    assert report.definitions == 11 and report.passed


# -- rules on their own: the mistake, and the look-alike that is fine ------------------------------------

def one(fn: Any) -> ToolDefinition:
    d = getattr(fn, TOOL_ATTR)
    assert isinstance(d, ToolDefinition)
    return d


def rules_of(*objs: Any, portability: str = "standard") -> list[str]:
    return lint_definitions(tools=objs, portability=portability).rule_ids  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "bad"), [
    ("TODO", True), ("todo: write this", True), ("Tool.", True), ("search", True), ("Search things", True),
    ("Lorem ipsum dolor sit amet", True), ("Search the catalog.", False), ("Return the first page of results.", False),
])
def test_description_specificity(text: str, bad: bool) -> None:
    assert (description_problem(text, "search") is not None) is bad


def test_description_repeating_a_camel_or_snake_name() -> None:
    assert description_problem("get user profile", "getUserProfile") is not None
    assert description_problem("Get User Profile", "get_user_profile") is not None


@pytest.mark.parametrize(("name", "cap"), [
    ("limit", True), ("per_page", True), ("perPage", True), ("page_size", True), ("pageSize", True),
    ("max_results", True), ("maxResults", True), ("max_items", True), ("maxRecords", True), ("result_limit", True),
    ("max_price", False), ("maxLat", False), ("maximum", False), ("count", False), ("size", False),
    ("limiter", False),
])
def test_cap_names(name: str, cap: bool) -> None:
    assert is_cap_name(name) is cap


def test_capped_list_needs_an_integer_cap_and_a_list_output() -> None:
    class Items(BaseModel):
        items: list[str] = Field(description="The items")

    @tool
    def named_limit(limit: Annotated[str, Field(description="Name of a rate limit")]) -> Items:
        """Show the items under a named limit."""
        return Items(items=[])

    @tool
    def capped_scalar(limit: Annotated[int, Field(description="Most items")] = 5) -> str:
        """Count items up to a limit."""
        return "0"

    @tool
    def capped_wrapped_list(limit: Annotated[int, Field(description="Most items")] = 5) -> list[str]:
        """List items up to a limit."""
        return []

    assert rules_of(named_limit, capped_scalar) == []
    assert rules_of(capped_wrapped_list) == ["capped-list-no-truncation"]


def test_output_truncation_fields_count_as_disclosure() -> None:
    class Page(BaseModel):
        rows: list[str] = Field(description="Rows of this page")
        truncated: bool = Field(description="Whether rows were cut off")

    @tool
    def page(per_page: Annotated[int, Field(description="Rows per page")] = 5) -> Page:
        """Return one page of rows."""
        return Page(rows=[], truncated=False)

    assert rules_of(page) == []


def test_field_descriptions_walk_nested_models_defs_and_items() -> None:
    class Leaf(BaseModel):
        value: str

    class Branch(BaseModel):
        leaves: list[Leaf] = Field(description="The leaves")
        note: str | None = None

    @tool
    def grow(branch: Annotated[Branch, Field(description="A branch")]) -> str:
        """Grow a branch with leaves."""
        return "grown"

    report = lint_definitions(tools=[grow])
    assert sorted(f.message.split("'")[1] for f in report.findings) == ["$defs.Branch.note", "$defs.Leaf.value"]


def test_field_descriptions_skip_constraints_and_the_result_wrapper() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "description": "A"}, "b": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"properties": {"b": {"minLength": 1}}, "required": ["b"]}],
        "if": {"properties": {"a": {"const": "x"}}}, "then": {"required": ["b"]},
    }
    assert undescribed_fields(schema) == ["b"]
    wrapped = {"type": "object", "properties": {"result": {"type": "array", "items": {
        "type": "object", "properties": {"x": {"type": "integer"}}}}}}
    assert undescribed_fields(wrapped, skip_root=frozenset({"result"})) == ["result[].x"]


def test_portable_formats_pass_and_others_do_not() -> None:
    import datetime as dt
    import uuid

    @tool
    def portable(
        when: Annotated[dt.datetime, Field(description="When")],
        day: Annotated[dt.date, Field(description="Day")],
        ident: Annotated[uuid.UUID, Field(description="Id")],
    ) -> str:
        """Use only portable string formats."""
        return "ok"

    @tool
    def path_format(where: Annotated[Any, Field(description="Where", json_schema_extra={"format": "uri-reference"})]
                    ) -> str:
        """Use a format OpenAI does not accept."""
        return "ok"

    assert rules_of(portable) == []
    assert "schema-format-portability" in rules_of(path_format)


def test_dialect_tag_2020_12_is_fine_unless_strict() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
              "properties": {"q": {"type": "string", "description": "Query"}}}

    @tool(input_schema=schema)
    def tagged(q: str) -> str:
        """Search with a tagged schema."""
        return q

    assert rules_of(tagged) == []
    assert rules_of(tagged, portability="strict") == ["schema-dialect-tag"]


def test_serializable_reports_sets_and_objects_but_not_tuples() -> None:
    @tool
    def plain() -> str:
        """Return a plain constant string."""
        return "x"

    d = one(plain)
    assert rules_of(dataclasses.replace(d, meta={"tags": ("a", "b")})) == []
    bad = lint_definitions(tools=[dataclasses.replace(d, meta={"tags": {"a"}})])
    assert bad.rule_ids == ["schema-serializable"]
    assert "_meta.tags" in bad.findings[0].message


@pytest.mark.parametrize(("code", "flagged"), [
    (JsonRpcErrorCode.NotFound, False), (JsonRpcErrorCode.UrlElicitationRequired, False), (-32050, True),
    (-32768, True), (-32001, False), (-1, False), (4290, False), (-32769, False),
])
def test_error_codes(code: int, flagged: bool) -> None:
    @tool(errors=[ErrorContract("boom", code, "It went boom", "Wait a minute and call again.")])
    def explode() -> str:
        """Explode on purpose, for testing."""
        return "boom"

    assert (rules_of(explode) == ["error-code-reserved"]) is flagged


def test_same_reason_same_code_across_tools_is_consistent() -> None:
    assert lint_definitions(tools=[clean_defs.fetch_item, clean_defs.fetch_order]).passed


def test_annotations_read_only_with_destructive_false_is_coherent() -> None:
    @tool(annotations={"read_only_hint": True, "destructive_hint": False})
    def peek() -> str:
        """Peek at the current value."""
        return "v"

    assert rules_of(peek) == []


def test_collisions_between_prompts_but_not_across_kinds() -> None:
    @prompt
    def code_review() -> str:
        """Review the staged code changes."""
        return "review"

    @prompt(name="Code-Review")
    def code_review_2() -> str:
        """Review the staged code, shouting."""
        return "REVIEW"

    @tool(name="code-review")
    def code_review_tool() -> str:
        """Run the automated code review."""
        return "ok"

    report = lint_definitions(tools=[code_review_tool], prompts=[code_review, code_review_2])
    assert [(f.rule, f.kind, f.name) for f in report.findings] == [("name-collision", "prompt", "Code-Review")]


def test_long_tool_names_are_not_portable() -> None:
    @tool(name="a" * 65)
    def long_name() -> str:
        """A tool with a very long name."""
        return "x"

    assert rules_of(long_name) == ["tool-name-portable"]


def test_resource_names_that_are_words_pass() -> None:
    @resource("docs://guide", mime_type="text/plain", description="The user guide of the service")
    def guide() -> str:
        return "guide"

    @resource("https://api.example.com/{path}", name="api.example.com", mime_type="text/plain",
              description="Anything from the API by path",
              list=lambda: [Resource(uri="https://api.example.com/status", name="status")])
    def api(path: str) -> str:
        return path

    report = lint_definitions(resources=[guide, api])
    assert [(f.rule, f.name) for f in report.findings] == [("resource-name-not-uri", "api.example.com")]


def test_finding_line_format() -> None:
    f = Finding("format-parity", "error", "tool", "show", "format= does not\nrender 'x'", "render it")
    assert f.line() == "error format-parity tool:show: format= does not render 'x' (fix: render it)"


def test_an_app_built_with_inline_decorators() -> None:
    app = McpApp("inline", "1.0.0", settings=Settings.from_env({}))

    @app.tool
    def add(a: Annotated[int, Field(description="First addend")],
            b: Annotated[int, Field(description="Second addend")]) -> int:
        """Add two integers and return the sum."""
        return a + b

    assert lint_app(app).passed


def test_hand_built_definitions_without_a_description_are_errors() -> None:
    @tool
    def plain() -> str:
        """Return a plain constant string."""
        return "x"

    report = lint_definitions(tools=[dataclasses.replace(one(plain), description="  ")])
    assert [(f.rule, f.severity) for f in report.findings] == [("description-required", "error")]


def test_structured_enrichment_fields_need_a_render_unless_delta_shaped() -> None:
    class Change(BaseModel):
        before: int = Field(description="Before")
        after: int = Field(description="After")

    class Extra(BaseModel):
        tags: list[str] | None = Field(default=None, description="Tags")
        facets: dict[str, int] | None = Field(default=None, description="Facets")
        stock: Change | None = Field(default=None, description="Stock change")
        note: str | None = Field(default=None, description="A note")

    @tool(enrichment=Extra, enrichment_trailer={"tags": {"render": lambda v: ", ".join(v)}})
    def lookup() -> str:
        """Look up an item and its tags."""
        return "x"

    report = lint_definitions(tools=[lookup])
    assert [(f.rule, f.message.split("'")[1]) for f in report.findings] == [("enrichment-trailer-render", "facets")]
    assert report.findings[0].severity == "error"
    assert "enrichment_trailer={'facets': {'render': fn}}" in report.findings[0].fix


def test_fail_without_contract_reads_the_handlers_own_calls() -> None:
    contract = [ErrorContract("gone", JsonRpcErrorCode.NotFound, "It is gone", "List the items and pick another.")]

    @tool(errors=contract)
    def declared(item: Annotated[str, Field(description="Item")], ctx: Context) -> str:
        """Fetch one item by id."""
        raise ctx.fail("gone")

    @tool
    def other_name(item: Annotated[str, Field(description="Item")], c: Context) -> str:
        """Fetch one item by id."""
        raise c.fail("gone")

    @tool
    def mentions_only(item: Annotated[str, Field(description="Item")], ctx: Context) -> str:
        """Fetch one item by id."""
        return "ctx.fail is documented" + item

    @prompt
    def ask(ctx: Context) -> str:
        """Ask for a summary of today."""
        raise ctx.fail("nope")

    assert rules_of(declared, mentions_only) == []
    report = lint_definitions(tools=[other_name], prompts=[ask])
    assert [(f.rule, f.name) for f in report.findings] == [("fail-without-contract", "other_name"),
                                                           ("fail-without-contract", "ask")]
    assert "c.fail()" in report.findings[0].message


def test_signature_rules_pass_decorated_and_bound_definitions() -> None:
    class Shop:
        def price(self, sku: Annotated[str, Field(description="Stock keeping unit")]) -> str:
            """Price of one item in the shop."""
            return sku

    assert rules_of(tool(Shop().price), clean_defs.show_board) == []
