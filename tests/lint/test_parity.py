"""format= parity: sentinel samples of the output type, every field looked for in content[]."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from mcpcore import TextContent, tool
from mcpcore.definitions.tools import TOOL_ATTR, ToolDefinition
from mcpcore.lint import Finding, lint_definitions
from mcpcore.lint.parity import sample_output
from tests.lint import clean_defs


def parity(fn_or_def: Any) -> list[Finding]:
    return [f for f in lint_definitions(tools=[fn_or_def]).findings if f.rule.startswith("format-parity")]


def fields(findings: list[Finding]) -> list[str]:
    return [f.message.split("'")[1] for f in findings if f.rule == "format-parity"]


def text(s: str) -> list[TextContent]:
    return [TextContent(text=s)]


def board_def() -> ToolDefinition:
    d = getattr(clean_defs.show_board, TOOL_ATTR)
    assert isinstance(d, ToolDefinition)
    return d


def render_board_without(board: clean_defs.Board, skip: str) -> list[TextContent]:
    """The clean renderer, minus one field."""
    parts = [] if skip == "name" else [board.name]
    owner = board.owner
    if skip != "kind":
        parts.append(owner.kind)
    if isinstance(owner, clean_defs.Person):
        parts += [] if skip == "login" else [owner.login]
    else:
        parts += ([] if skip == "slug" else [owner.slug]) + ([] if skip == "members" else [f"{owner.members:,}"])
    for c in board.cards:
        shown = {"title": c.title, "points": str(c.points), "ratio": f"{c.ratio:.2f}", "status": c.status.value,
                 "blocked": f"blocked: {c.blocked}", "due": c.due.strftime("%d %b %Y") if c.due else "",
                 "labels": " ".join(f"{k}:{v}" for k, v in c.labels.items())}
        parts += [v for k, v in shown.items() if k != skip]
    return text("\n".join(parts))


def test_a_complete_format_passes() -> None:
    assert parity(clean_defs.show_board) == []


@pytest.mark.parametrize(("skip", "path"), [
    ("name", "name"), ("kind", "owner.kind"), ("login", "owner.login"), ("slug", "owner.slug"),
    ("members", "owner.members"), ("title", "cards[].title"), ("points", "cards[].points"),
    ("ratio", "cards[].ratio"), ("status", "cards[].status"), ("blocked", "cards[].blocked"),
    ("due", "cards[].due"), ("labels", "cards[].labels.<key>"),
])
def test_each_missing_field_is_reported_by_path(skip: str, path: str) -> None:
    d = dataclasses.replace(board_def(), format=lambda b: render_board_without(b, skip))
    assert fields(parity(d)) == [path]


def test_every_union_branch_is_rendered_once() -> None:
    seen: list[str] = []

    def spy(board: clean_defs.Board) -> list[TextContent]:
        seen.append(type(board.owner).__name__)
        return render_board_without(board, "")

    assert parity(dataclasses.replace(board_def(), format=spy)) == []
    assert sorted(set(seen)) == ["Person", "Team"]


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Reading(BaseModel):
    sensor: str = Field(description="Sensor id")
    value: int = Field(description="Raw value")
    level: Level = Field(description="Alert level")
    ok: bool = Field(description="Whether the reading is within range")
    mode: Literal["auto", "manual"] = Field(description="How it was taken")
    at: dt.datetime = Field(description="When it was taken")


def reading_tool(fmt: Any) -> Any:
    @tool(format=fmt)
    def read_sensor() -> Reading:
        """Read a sensor once and report the value."""
        raise NotImplementedError

    return read_sensor


def test_numbers_may_carry_digit_group_separators() -> None:
    for style in ("{:,}", "{:_}", "{}"):
        fmt = (lambda s: lambda r: text(f"{r.sensor} {s.format(r.value)} {r.level.name} ok={r.ok} {r.mode} "
                                        f"{r.at:%Y-%m-%d}"))(style)
        assert parity(reading_tool(fmt)) == [], style


def test_lossy_numbers_do_not_count() -> None:
    fmt = lambda r: text(f"{r.sensor} {r.value / 1e6:.1f}M {r.level.name} ok={r.ok} {r.mode} {r.at:%Y}")  # noqa: E731
    assert fields(parity(reading_tool(fmt))) == ["value"]


def test_dictated_values_match_as_tokens_or_by_key_name() -> None:
    by_key = lambda r: text(f"{r.sensor} {r.value} Level: urgent, ok={'yes' if r.ok else 'no'}, "  # noqa: E731
                            f"MODE {r.mode.upper()} {r.at.isoformat()}")
    assert parity(reading_tool(by_key)) == []
    # 'auto' inside another word is not the literal being rendered, and 'mode' is absent.
    inside = lambda r: text(f"{r.sensor} {r.value} {r.level.value} {r.ok} {r.at:%Y} automatic")  # noqa: E731
    assert fields(parity(reading_tool(inside))) == ["mode"]


def test_a_format_that_raises_is_one_finding() -> None:
    def strict_format(r: Reading) -> list[TextContent]:
        if r.value > 1000:
            raise ValueError("implausible reading")
        return text(r.sensor)

    findings = parity(reading_tool(strict_format))
    assert [f.rule for f in findings] == ["format-parity-threw"]
    assert "ValueError: implausible reading" in findings[0].message


@pytest.mark.parametrize("fmt", [
    lambda r: f"{r.sensor}",
    lambda r: TextContent(text=r.sensor),
    lambda r: [f"{r.sensor}"],
])
def test_a_format_returning_no_list_of_blocks_is_reported(fmt: Any) -> None:
    assert [f.rule for f in parity(reading_tool(fmt))] == ["format-parity-threw"]


def test_an_async_format_is_reported_without_an_unawaited_coroutine() -> None:
    async def fmt(r: Reading) -> list[TextContent]:
        return text(r.sensor)

    findings = parity(reading_tool(fmt))
    assert [f.rule for f in findings] == ["format-parity-threw"]
    assert "awaitable" in findings[0].message


def test_wrapped_scalar_and_list_outputs() -> None:
    @tool(format=lambda s: text("done"))
    def say() -> str:
        """Say something short and sweet."""
        return "hi"

    @tool(format=lambda xs: text(", ".join(map(str, xs))))
    def numbers() -> list[int]:
        """Return a few numbers in a list."""
        return [1]

    assert fields(parity(say)) == ["result"]
    assert parity(numbers) == []


def test_recursive_models_stop_without_a_depth_finding() -> None:
    class Node(BaseModel):
        label: str = Field(description="Node label")
        children: list[Node] = Field(default_factory=list, description="Child nodes")

    Node.model_rebuild()

    def render(n: Node) -> list[TextContent]:
        return text(n.label + " " + " ".join(c.label for c in n.children))

    @tool(format=render)
    def tree() -> Node:
        """Return the node tree of the project."""
        raise NotImplementedError

    assert parity(tree) == []


def test_depth_limit_is_reported_not_guessed() -> None:
    _, leaves, cut = sample_output(dict[str, dict[str, dict[str, dict[str, dict[str, dict[str, dict[str, dict[
        str, dict[str, str]]]]]]]]], wrap=True)
    assert cut == {"result" + ".<key>" * 9}
    assert leaves == []
    shallow, shallow_leaves, shallow_cut = sample_output(dict[str, list[int]], wrap=True)
    assert shallow_cut == set() and [leaf.path for leaf in shallow_leaves] == ["result.<key>[]"]
    assert shallow == {"zq81k0001": [900000001]}


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Place(TypedDict):
    name: str
    where: Point


def test_dataclass_and_typeddict_outputs() -> None:
    @tool(format=lambda p: text(f"{p['name']} at {p['where'].x}"))
    def place() -> Place:
        """Return the place of interest."""
        raise NotImplementedError

    assert fields(parity(place)) == ["where.y"]


def test_enrichment_is_not_part_of_parity_and_no_format_means_no_check() -> None:
    class Out(BaseModel):
        rows: list[str] = Field(description="Rows")

    class Extra(BaseModel):
        totalCount: int | None = Field(default=None, description="Total rows")

    @tool(format=lambda o: text("\n".join(o.rows)), enrichment=Extra)
    def rows() -> Out:
        """Return the rows of the table."""
        return Out(rows=[])

    @tool
    def rows_default(n: Annotated[int, Field(description="How many")] = 1) -> Out:
        """Return the rows using the default rendering."""
        return Out(rows=[])

    @tool(format=lambda o: text("nothing"), structured=False)
    def rows_unstructured() -> Out:
        """Return rows with structured output turned off."""
        return Out(rows=[])

    assert parity(rows) == parity(rows_default) == parity(rows_unstructured) == []
