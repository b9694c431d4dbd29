"""Definitions that are each wrong in exactly one way: one finding per lint rule.

    .venv/bin/python -m mcpcore lint tests.lint.broken_defs:app

Everything else about each definition is clean, so the report of ``app`` is exactly one finding
for every rule except ``name-unique`` (an app's registry cannot hold two tools of one name: lint
``DUPLICATE_NAME`` beside ``app``'s tools with ``lint_definitions``) and the strict-only
``schema-no-defs``. A few rules guard against what the decorators already refuse; those
definitions are built normally and then altered with ``dataclasses.replace``, as a generator
of definitions could.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated, Any, Literal

import httpx
from pydantic import BaseModel, Field, HttpUrl

from mcpcore import (
    Context,
    Depends,
    ErrorContract,
    JsonRpcErrorCode,
    McpApp,
    Settings,
    TextContent,
    prompt,
    resource,
    tool,
)
from mcpcore.definitions.prompts import build_prompt
from mcpcore.definitions.schema import args_plan
from mcpcore.definitions.tools import ToolDefinition, build_tool
from mcpcore.extensions import App
from mcpcore.lint import lint_ignore
from mcpcore.openapi import ALL, openapi_tools

RECOVERY = "Check the identifier and call the tool again."


def _greeting(who: Annotated[str, Field(description="Who to greet")]) -> str:
    """Greet someone by their name."""
    return f"Hello {who}"


def _handmade(fn: Any, **changes: Any) -> ToolDefinition:
    return dataclasses.replace(build_tool(fn), **changes)


# -- descriptions and names -------------------------------------------------------------------------

@tool(description="TODO")
def placeholder_description() -> str:  # description-specific
    return "ok"


@tool
def get_user_profile(user_id: Annotated[str, Field(description="The user's id")]) -> str:
    """Look up a user's profile by id."""
    return user_id


@tool
def getUserProfile(user_id: Annotated[str, Field(description="The user's id")]) -> str:  # name-collision
    """Look up a user's profile, the camelCase way."""
    return user_id


@tool(name="users.lookup")  # tool-name-portable
def users_lookup(user_id: Annotated[str, Field(description="The user's id")]) -> str:
    """Look up users by their id."""
    return user_id


BAD_NAME = _handmade(_greeting, name="greet someone")  # name-format

DUPLICATE_NAME = _handmade(_greeting, name="get_user_profile")  # name-unique (with lint_definitions)

# -- schemas ----------------------------------------------------------------------------------------

@tool
def scale_series(
    ratio: Annotated[float, Field(description="Scale factor; unbounded by default")] = float("inf"),
) -> str:  # schema-serializable: the default is Infinity
    """Scale a series by a ratio."""
    return str(ratio)


@tool
def fetch_page(homepage: Annotated[HttpUrl, Field(description="Page to fetch")]) -> str:  # schema-format-portability
    """Fetch a web page and return its title."""
    return str(homepage)


class Cat(BaseModel):
    kind: Literal["cat"] = Field(description="Always 'cat'")
    lives: int = Field(description="Lives left")


class Dog(BaseModel):
    kind: Literal["dog"] = Field(description="Always 'dog'")
    good: bool = Field(description="Whether the dog is good")


@tool
def adopt_pet(
    pet: Annotated[Cat | Dog, Field(discriminator="kind", description="The pet to adopt")],
) -> str:  # schema-no-discriminator-keyword
    """Adopt a cat or a dog."""
    return pet.kind


@tool
def store_extra(
    extra: Annotated[Any | None, Field(description="Anything to store")] = None,
) -> str:  # schema-anyof-needs-type
    """Store an arbitrary value for later."""
    return repr(extra)


DRAFT_07 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to search for"}},
    "required": ["query"],
}


@tool(input_schema=DRAFT_07)
def legacy_search(query: str) -> str:  # schema-dialect-tag
    """Search with a hand-written draft-07 schema."""
    return query


@tool
def undescribed_input(
    city: str,
    country: Annotated[str, Field(description="ISO country code")] = "NL",
) -> str:  # input-field-description
    """Look up the weather in a city."""
    return f"{city}, {country}"


class Forecast(BaseModel):
    summary: str = Field(description="One-line summary")
    temp_c: float


@tool
def forecast(city: Annotated[str, Field(description="City name")]) -> Forecast:  # output-field-description
    """Forecast tomorrow's weather in a city."""
    return Forecast(summary=f"Sunny in {city}", temp_c=21.0)


# -- error contracts --------------------------------------------------------------------------------

HANDMADE_CONTRACTS = _handmade(
    _greeting, name="greet_with_contracts",
    errors=(
        ErrorContract("NotSnake", JsonRpcErrorCode.NotFound, "Nobody by that name", RECOVERY),  # error-reason-format
        ErrorContract("busy", JsonRpcErrorCode.RateLimited, "Too many greetings", RECOVERY),
        ErrorContract("busy", JsonRpcErrorCode.RateLimited, "Too many greetings", RECOVERY),  # error-reason-unique
        ErrorContract("no_when", JsonRpcErrorCode.Conflict, "", RECOVERY),  # error-when-required
    ),
)


@tool(errors=[ErrorContract("upstream_down", JsonRpcErrorCode.ServiceUnavailable, "The upstream is down", RECOVERY)])
def ping_upstream() -> str:
    """Ping the upstream service once."""
    return "pong"


@tool(errors=[ErrorContract("upstream_down", JsonRpcErrorCode.Timeout, "The upstream is slow", RECOVERY)])
def probe_upstream() -> str:  # error-reason-consistent: same reason, another code
    """Probe the upstream service health."""
    return "ok"


@tool(errors=[ErrorContract("locked", JsonRpcErrorCode.Conflict, "The record is locked", "Try again.")])
def edit_record(record_id: Annotated[str, Field(description="Record id")]) -> str:  # error-recovery-min-words
    """Edit a record in place."""
    return record_id


@tool(errors=[ErrorContract("quota", -32050, "The quota is used up", "Wait until midnight UTC, then call again.")])
def spend_quota() -> str:  # error-code-reserved
    """Spend one unit of the quota."""
    return "spent"


@tool
def cancel_order(order_id: Annotated[str, Field(description="Order id")], ctx: Context) -> str:  # fail-without-contract
    """Cancel an order that has not shipped yet."""
    if order_id == "shipped":
        raise ctx.fail("already_shipped")
    return order_id


# -- enrichment -------------------------------------------------------------------------------------

class Names(BaseModel):
    names: list[str] = Field(description="Matching names")


class Echo(BaseModel):
    effectiveQuery: str | None = None


@tool(enrichment=Echo)
def find_names(query: Annotated[str, Field(description="Name prefix")]) -> Names:  # enrichment-field-description
    """Find names starting with a prefix."""
    return Names(names=[query])


class Totals(BaseModel):
    totalCount: int | None = Field(default=None, description="Total matches")


@tool(enrichment=Totals, enrichment_trailer={"totl": {"label": "Total"}})
def count_names(query: Annotated[str, Field(description="Name prefix")]) -> Names:  # enrichment-trailer-unknown-field
    """Count names starting with a prefix."""
    return Names(names=[query])


class Facets(BaseModel):
    facets: dict[str, int] | None = Field(default=None, description="Matches per category")


@tool(enrichment=Facets)
def facet_names(query: Annotated[str, Field(description="Name prefix")]) -> Names:  # enrichment-trailer-render
    """Find names by prefix, with the matches per category."""
    return Names(names=[query])


@tool
def list_names(
    limit: Annotated[int, Field(description="Most names to return")] = 10,
) -> Names:  # capped-list-no-truncation
    """List known names, capped at a limit."""
    return Names(names=["ada", "grace"][:limit])


# -- format parity ----------------------------------------------------------------------------------

class Person(BaseModel):
    name: str = Field(description="Full name")
    email: str = Field(description="Email address")


@tool(format=lambda p: [TextContent(text=f"**{p.name}**")])
def show_person(person_id: Annotated[str, Field(description="Person id")]) -> Person:  # format-parity: email
    """Show a person's name and email address."""
    return Person(name=person_id, email=f"{person_id}@example.com")


@tool(format=lambda n: [TextContent(text=f"{n.names[0]} and {n.names[1]}")])
def first_two_names() -> Names:  # format-parity-threw: assumes two names
    """Return the first two known names."""
    return Names(names=["ada", "grace"])


Deep = dict[str, dict[str, dict[str, dict[str, dict[str, dict[str, dict[str, dict[str, str]]]]]]]]


class Tree(BaseModel):
    tree: Deep = Field(description="A deeply nested mapping")


@tool(format=lambda t: [TextContent(text=repr(t))])
def deep_tree() -> Tree:  # format-parity-depth-limit
    """Return a very deeply nested mapping."""
    return Tree(tree={})


# -- signatures (what the decorators refuse, in definitions built around them) ------------------------

class Weather:
    def forecast(self, city: Annotated[str, Field(description="City name")]) -> str:
        """Forecast tomorrow's weather in a city."""
        return city


# signature-mistake: the method's `self`
UNBOUND_METHOD = dataclasses.replace(build_tool(_greeting), name="weather_forecast", fn=Weather.forecast)


def _brief(topic: Annotated[str, Field(description="What the brief is about")]) -> str:
    """Write a one-page brief on a topic."""
    return topic


def _filtered(filters: Annotated[dict[str, str], Field(description="Fields to match")]) -> str:
    return str(filters)


MAP_ARGUMENT = dataclasses.replace(  # prompt-argument-type
    build_prompt(_brief, name="brief_filtered"),
    args=args_plan(_filtered, "prompt 'brief_filtered'", model_name="filtered", kind="prompt"))

# -- dependencies and visibility -------------------------------------------------------------------

def open_ledger() -> str:
    return "ledger"


@tool(input_schema={"type": "object", "properties": {
    "account": {"type": "string", "description": "The account to sum"},
    "ledger": {"type": "string", "description": "The ledger connection"}}, "required": ["account"]})
def sum_account(account: str, ledger: Annotated[str, Depends(open_ledger)]) -> int:  # dependency-in-schema
    """Sum every entry of one account in the ledger."""
    return len(account)


@tool(auth=["reports:write"], visible_to=["reports:read"])
def rebuild_reports() -> str:  # visibility-covers-auth
    """Rebuild every monthly report from the ledger."""
    return "rebuilt"


# -- annotations, resources, prompts, suppressions --------------------------------------------------

@tool(annotations={"read_only_hint": True, "destructive_hint": True})
def purge_cache() -> str:  # annotation-coherence
    """Purge the whole response cache."""
    return "purged"


@resource("https://status.example.com/health", name="status.example.com", mime_type="application/json",
          description="Health of the status service")
def status_health() -> dict[str, str]:  # resource-name-not-uri
    return {"status": "ok"}


@resource("notes://readme", description="The notes service readme")
def notes_readme() -> str:  # resource-mime-type
    return "Read me."


@resource("notes://{note_id}", mime_type="text/markdown", description="One note, by id")
def note(note_id: str) -> str:  # resource-template-list
    return f"note {note_id}"


@resource("notes://changelog", mime_type="text/markdown")
def notes_changelog() -> str:  # description-required (a warning for resources)
    return "Nothing yet."


@prompt
def summarize(text: str) -> str:  # prompt-argument-description
    """Summarise a text in three bullet points."""
    return f"Summarise: {text}"


# -- MCP Apps --------------------------------------------------------------------------------------

@tool(app=App(html="<p>chart</p>"))
def chart_total() -> int:  # app-text-fallback
    """Count the points the chart view draws."""
    return 3


@tool(app=App(uri="ui://missing/view.html", fallback="Open the map in an MCP Apps host."))
def show_map() -> str:  # app-resource-not-found
    """Show the delivery map for today's route."""
    return "map"


@tool(app=App(html="<p>feed</p>", csp={"connectDomains": ["api.example.com"]}, fallback="The live feed."))
def live_feed() -> str:  # app-csp-malformed
    """Stream the live order feed into a view."""
    return "feed"


@lint_ignore("no-such-rule")
@tool
def stale_suppression() -> str:  # lint-ignore-stale
    """Return a constant greeting string."""
    return "hi"


app = McpApp("broken", "0.0.1", settings=Settings.from_env({}))
app.include(sys.modules[__name__], BAD_NAME, HANDMADE_CONTRACTS, UNBOUND_METHOD, MAP_ARGUMENT)

# openapi-skipped: one operation of the document becomes a tool, the other names a schema that is not there.
INVENTORY = {
    "openapi": "3.0.3", "info": {"title": "Inventory", "version": "1"},
    "paths": {
        "/ping": {"get": {"operationId": "inventory_ping", "summary": "Check that the inventory service answers",
                          "responses": {"204": {"description": "it answers"}}}},
        "/items": {"post": {"operationId": "inventory_add", "summary": "Add an item to the inventory",
                            "requestBody": {"content": {"application/json": {
                                "schema": {"$ref": "#/components/schemas/Missing"}}}},
                            "responses": {"204": {"description": "added"}}}},
    },
}
app.include(*openapi_tools(INVENTORY, client=httpx.AsyncClient(base_url="https://inventory.example"), routes=ALL))
