"""Definitions that do everything right, including the shapes rules must not mistake for mistakes:
zero findings.

    .venv/bin/python -m mcpcore lint tests.lint.clean_defs:app
"""

from __future__ import annotations

import datetime as dt
import enum
import sys
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcpcore import (
    Context,
    ErrorContract,
    JsonRpcErrorCode,
    McpApp,
    PromptMessage,
    Resource,
    Settings,
    TextContent,
    prompt,
    resource,
    tool,
)

# -- a tool with format= rendering every field of a nested, union-bearing output -------------------------

class Status(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"


class Person(BaseModel):
    kind: Literal["person"] = Field(description="Owner kind")
    login: str = Field(description="Login name")


class Team(BaseModel):
    kind: Literal["team"] = Field(description="Owner kind")
    slug: str = Field(description="Team slug")
    members: int = Field(description="Number of members")


class Card(BaseModel):
    title: str = Field(description="Card title")
    points: int = Field(description="Story points")
    ratio: float = Field(description="Share of the board")
    status: Status = Field(description="Workflow status")
    blocked: bool = Field(description="Whether something blocks the card")
    due: dt.date | None = Field(default=None, description="Due date")
    labels: dict[str, str] = Field(default_factory=dict, description="Label name to colour")


class Board(BaseModel):
    name: str = Field(description="Board name")
    owner: Person | Team = Field(description="Who owns the board")
    cards: list[Card] = Field(description="Cards on the board")


def render_board(board: Board) -> list[TextContent]:
    owner = board.owner.login if isinstance(board.owner, Person) else f"{board.owner.slug} ({board.owner.members:,})"
    lines = [f"# {board.name}", f"Owner ({board.owner.kind}): {owner}"]
    for c in board.cards:
        labels = ", ".join(f"{k}={v}" for k, v in c.labels.items())
        lines.append(f"- {c.title}: {c.points} pts, {c.ratio:.1f}, {c.status.value}, blocked={c.blocked}, "
                     f"due {c.due.isoformat() if c.due else 'never'}, labels: {labels}")
    return [TextContent(text="\n".join(lines))]


@tool(format=render_board, annotations={"read_only_hint": True, "open_world_hint": False})
def show_board(board_id: Annotated[str, Field(description="Board id, e.g. 'b-1'")]) -> Board:
    """Show a board with its owner and every card on it."""
    return Board(name=board_id, owner=Person(kind="person", login="ada"), cards=[])


# -- capped lists that disclose truncation, and inputs that only look like caps -------------------------

class Hits(BaseModel):
    hits: list[str] = Field(description="Matching documents")


class Truncation(BaseModel):
    truncated: bool | None = Field(default=None, description="True when the list was capped")
    shown: int | None = Field(default=None, description="Number of items returned")
    cap: int | None = Field(default=None, description="The limit that was applied")
    notice: str | None = Field(default=None, description="Guidance when the list was capped")


@tool(enrichment=Truncation, enrichment_trailer={"shown": {"label": "Shown"}})
def search_docs(
    query: Annotated[str, Field(description="Search terms")],
    ctx: Context,
    max_results: Annotated[int, Field(ge=1, le=100, description="Most documents to return")] = 20,
) -> Hits:
    """Search the documents by words, newest first."""
    hits = [query][:max_results]
    if len(hits) >= max_results:
        ctx.enrich.truncated(shown=len(hits), cap=max_results)
    return Hits(hits=hits)


class PageTotal(BaseModel):
    totalCount: int = Field(description="Total before paging")


@tool(enrichment=PageTotal)
def list_prices(
    ctx: Context,
    page_size: Annotated[int, Field(description="Prices per page")] = 50,
    max_price: Annotated[float, Field(description="Upper bound of the price filter, in euros")] = 100.0,
) -> list[float]:
    """List prices at or below a bound, one page at a time."""
    prices = [p for p in (9.5, 20.0) if p <= max_price]
    ctx.enrich.total(len(prices))
    return prices[:page_size]


@tool
def filter_prices(
    max_price: Annotated[float, Field(description="Upper bound of the price filter, in euros")],
) -> list[float]:
    """Return the known prices at or below a bound."""
    return [p for p in (9.5, 20.0) if p <= max_price]


# -- a hand-written 2020-12 schema whose conditionals are constraints, not declarations -----------------

CONTACT = {
    "type": "object",
    "properties": {
        "method": {"type": "string", "enum": ["phone", "email"], "description": "How to reach the person"},
        "phone": {"type": "string", "description": "Phone number, digits only"},
        "email": {"type": "string", "format": "email", "description": "Email address"},
    },
    "required": ["method"],
    "if": {"properties": {"method": {"const": "phone"}}},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@tool(input_schema=CONTACT, annotations={"destructive_hint": False, "idempotent_hint": True})
def save_contact(method: str, phone: str | None = None, email: str | None = None) -> str:
    """Save how to reach a person: by phone or by email."""
    return f"saved {method}"


# -- error contracts -----------------------------------------------------------------------------------

@tool(errors=[
    ErrorContract("no_match", JsonRpcErrorCode.NotFound, "No item has that id",
                  "Check the id with list_items and call again."),
    ErrorContract("queue_full", JsonRpcErrorCode.RateLimited, "The queue is at capacity",
                  "Wait a few seconds, then retry with fewer ids.", retryable=True),
    ErrorContract("quota_exceeded", 4290, "The monthly quota is used up",
                  "Ask an administrator to raise the monthly quota."),
])
def fetch_item(item_id: Annotated[str, Field(description="Item id, e.g. '42'")], ctx: Context) -> str:
    """Fetch one item by its id."""
    raise ctx.fail("no_match")


@tool(errors=[ErrorContract("no_match", JsonRpcErrorCode.NotFound, "No order has that id",
                            "List the orders first and use one of their ids.")])
def fetch_order(order_id: Annotated[str, Field(description="Order id")], ctx: Context) -> str:
    """Fetch one order by its id."""
    raise ctx.fail("no_match")


# -- resources and prompts ------------------------------------------------------------------------------

@resource("docs://guide", mime_type="text/markdown", description="The user guide, as markdown")
def guide() -> str:
    return "# Guide"


@resource("docs://pages/{slug}", name="doc_page", mime_type="text/markdown", description="One page of the docs",
          list=lambda: [Resource(uri="docs://pages/intro", name="intro")])
def doc_page(slug: str) -> str:
    return f"# {slug}"


@prompt
def review_code(
    code: Annotated[str, Field(description="The code to review")],
    focus: Annotated[str, Field(description="What to look at, e.g. 'naming'")] = "correctness",
) -> list[PromptMessage]:
    """Ask for a focused code review of a snippet."""
    return [PromptMessage(role="user", content=TextContent(text=f"Review for {focus}:\n{code}"))]


@prompt
def daily_standup() -> str:
    """Draft today's stand-up notes from scratch."""
    return "Draft my stand-up notes."


app = McpApp("clean", "1.0.0", settings=Settings.from_env({}))
app.include(sys.modules[__name__])
