"""Silencing rules: per definition with @lint_ignore, from outside with ignore=, and stale entries."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from mcpcore import resource, tool
from mcpcore.lint import IGNORE_ATTR, lint_definitions, lint_ignore


class Items(BaseModel):
    items: list[str] = Field(description="The items")


@lint_ignore("capped-list-no-truncation", reason="the upstream never returns more than the limit")
@tool
def above(limit: Annotated[int, Field(description="Most items")] = 5) -> Items:
    """List items, decorated above @tool."""
    return Items(items=[])


@tool
@lint_ignore("capped-list-no-truncation")
def below(limit: Annotated[int, Field(description="Most items")] = 5) -> Items:
    """List items, decorated below @tool."""
    return Items(items=[])


@tool
def unsilenced(limit: Annotated[int, Field(description="Most items")] = 5) -> Items:
    """List items without any suppression."""
    return Items(items=[])


def test_lint_ignore_works_above_and_below_the_definition_decorator() -> None:
    report = lint_definitions(tools=[above, below, unsilenced])
    assert [(f.rule, f.name) for f in report.findings] == [("capped-list-no-truncation", "unsilenced")]
    assert [(f.rule, f.name) for f in report.suppressed] == [("capped-list-no-truncation", "above"),
                                                             ("capped-list-no-truncation", "below")]
    assert getattr(above, IGNORE_ATTR) == {
        "capped-list-no-truncation": "the upstream never returns more than the limit"}
    assert report.to_json()["counts"]["suppressed"] == 2


def test_lint_ignore_patterns_and_stacking() -> None:
    @lint_ignore("schema-*")
    @lint_ignore("input-field-description")
    @tool
    def legacy(when: str, extra: object | None = None) -> str:
        """A legacy tool with a loose schema."""
        return when

    assert getattr(legacy, IGNORE_ATTR).keys() == {"schema-*", "input-field-description"}
    report = lint_definitions(tools=[legacy])
    assert report.passed, report.text()
    assert sorted(f.rule for f in report.suppressed) == ["input-field-description", "input-field-description",
                                                         "schema-anyof-needs-type"]


def test_a_suppression_that_silences_nothing_is_stale() -> None:
    @lint_ignore("format-parity", "descripton-specific")
    @tool
    def tidy() -> str:
        """Return a tidy constant string."""
        return "tidy"

    report = lint_definitions(tools=[tidy])
    assert [f.rule for f in report.findings] == ["lint-ignore-stale", "lint-ignore-stale"]
    assert "'format-parity'" in report.findings[0].message and "finds nothing" in report.findings[0].message
    assert "'descripton-specific'" in report.findings[1].message and "no lint rule" in report.findings[1].message


def test_strict_only_suppressions_are_not_stale_in_standard_mode() -> None:
    class Inner(BaseModel):
        x: int = Field(description="X")

    @lint_ignore("schema-no-defs", reason="every client we serve resolves references")
    @tool
    def nested(inner: Annotated[Inner, Field(description="Inner value")]) -> str:
        """Take a nested model as input."""
        return "ok"

    assert lint_definitions(tools=[nested]).passed
    strict = lint_definitions(tools=[nested], portability="strict")
    assert strict.passed and [f.rule for f in strict.suppressed] == ["schema-no-defs"]


def test_stale_findings_can_themselves_be_silenced() -> None:
    @lint_ignore("lint-ignore-stale", "format-parity")
    @tool
    def quiet() -> str:
        """Return a quiet constant string."""
        return "quiet"

    assert lint_definitions(tools=[quiet]).passed


def test_ignore_mapping_by_definition_and_everywhere() -> None:
    @resource("notes://{id}", mime_type="text/plain", description="One note by its id")
    def note(id: str) -> str:
        return id

    report = lint_definitions(tools=[unsilenced], resources=[note],
                              ignore={"tool:unsilenced": ["capped-list-no-truncation"]})
    assert report.rule_ids == ["resource-template-list"]
    everywhere = lint_definitions(tools=[unsilenced], resources=[note],
                                  ignore={"*": ["capped-list-*", "resource-template-list"]})
    assert everywhere.passed and len(everywhere.suppressed) == 2


def test_bad_suppressions_are_refused_early() -> None:
    with pytest.raises(ValueError, match="names no lint rule"):
        lint_definitions(tools=[unsilenced], ignore={"*": ["no-such-rule"]})
    with pytest.raises(TypeError):
        lint_ignore()
    with pytest.raises(TypeError):
        lint_ignore("")
    with pytest.raises(TypeError, match="decorates a function"):
        lint_ignore("format-parity")(42)


def test_suppressions_for_strict_findings_and_overlapping_patterns_are_not_stale() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
              "properties": {"q": {"type": "string", "description": "Query"}}}

    @lint_ignore("schema-dialect-tag", "schema-*", reason="the conformance suite checks the tag")
    @tool(input_schema=schema)
    def tagged(q: str) -> str:
        """Search with a schema that carries its dialect."""
        return q

    assert lint_definitions(tools=[tagged]).findings == []
    strict = lint_definitions(tools=[tagged], portability="strict")
    assert strict.findings == [] and [f.rule for f in strict.suppressed] == ["schema-dialect-tag"]
