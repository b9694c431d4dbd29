"""``app.mount``: names and URIs behind a namespace, the budget and collision checks, both eras."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpcore import ConfigurationError, Context, McpApp, McpError, Settings, prompt, resource, tool
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]


def settings(**env: str) -> Settings:
    return Settings.from_env(env)


async def next_note(events: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    """The next JSON-RPC message of a GET stream (primers skipped)."""
    while True:
        ev = await asyncio.wait_for(anext(events), 5)
        if ev.get("data"):
            note: dict[str, Any] = json.loads(ev["data"])
            return note


def billing() -> McpApp:
    @tool
    def invoice_total(customer: str) -> dict[str, Any]:
        """Total owed by a customer."""
        return {"customer": customer, "total": 42}

    @prompt
    def dunning(customer: str) -> str:
        """A reminder letter."""
        return f"Dear {customer}, please pay."

    @resource("data://rates", mime_type="text/plain")
    def rates() -> str:
        """Today's rates."""
        return "standard"

    @resource("data://invoices/{number}", mime_type="text/plain", complete={"number": lambda v, _a: ["1001", "1002"]})
    def invoice(number: str, ctx: Context) -> str:
        """One invoice."""
        return f"invoice {number} at {ctx.uri}"

    return McpApp("billing", settings=settings(), tools=[invoice_total], prompts=[dunning], resources=[rates, invoice])


def parent(**env: str) -> McpApp:
    @tool
    def ping_parent() -> str:
        """Answers pong."""
        return "pong"

    return McpApp("parent", settings=settings(**env), tools=[ping_parent])


@pytest.mark.parametrize("era", ERAS)
async def test_names_uris_and_calls_through_the_parent(era: str) -> None:
    app = parent()
    app.mount(billing(), namespace="billing")
    async with McpTestClient(app, era=era) as c:
        names = {t["name"] for t in await c.list_tools()}
        assert names == {"ping_parent", "billing_invoice_total"}
        r = await c.call_tool("billing_invoice_total", {"customer": "acme"})
        assert r["structuredContent"] == {"customer": "acme", "total": 42} and not r.get("isError")
        prompts = (await c.request("prompts/list"))["prompts"]
        assert [p["name"] for p in prompts] == ["billing_dunning"]
        got = await c.request("prompts/get", {"name": "billing_dunning", "arguments": {"customer": "acme"}})
        assert got["messages"][0]["content"]["text"] == "Dear acme, please pay."
        res = (await c.request("resources/list"))["resources"]
        assert [r["uri"] for r in res] == ["data://billing/rates"]
        tpl = (await c.request("resources/templates/list"))["resourceTemplates"]
        assert [t["uriTemplate"] for t in tpl] == ["data://billing/invoices/{number}"]
        read = await c.read_resource("data://billing/invoices/7")
        assert read["contents"][0] == {"uri": "data://billing/invoices/7", "mimeType": "text/plain",
                                       "text": "invoice 7 at data://billing/invoices/7"}
        assert (await c.read_resource("data://billing/rates"))["contents"][0]["text"] == "standard"
        done = await c.request("completion/complete", {
            "ref": {"type": "ref/resource", "uri": "data://billing/invoices/{number}"},
            "argument": {"name": "number", "value": "10"}})
        assert done["completion"]["values"] == ["1001", "1002"]
        with pytest.raises(McpError):
            await c.read_resource("data://rates")  # the child's own URI is not the parent's
        with pytest.raises(McpError):
            await c.call_tool("invoice_total", {"customer": "acme"})


async def test_mounts_argument_and_separator() -> None:
    app = McpApp("parent", settings=settings(MCP_MOUNT_SEPARATOR="."), mounts={"billing": billing()})
    app.mount(billing(), namespace="ledger", separator="__")
    async with McpTestClient(app) as c:
        assert {t["name"] for t in await c.list_tools()} == {"billing.invoice_total", "ledger__invoice_total"}


async def test_the_mount_function_is_deprecated_for_app_mount() -> None:
    """``mcpcore.compose.mount(parent, child, ...)`` still works, warns (docs/versioning.md) and
    returns the new mount; the compose modules see the parent and the child through their seams."""
    from mcpcore.compose import mount

    app, child = parent(), billing()
    with pytest.warns(DeprecationWarning, match=r"removed in mcpcore 0\.4\.0: call parent\.mount") as caught:
        m = mount(app, child, "billing")
    assert caught[0].filename == __file__
    assert app.composition is not None and app.composition.mounts == [m] and m.ns.namespace == "billing"
    assert app.composition.seam is app.seam and m.child is child.seam and m.app is child.seam
    async with McpTestClient(app) as c:
        assert "billing_invoice_total" in {t["name"] for t in await c.list_tools()}
    with pytest.raises(ConfigurationError, match="cannot mount itself"):
        app.mount(app, "self")
    with pytest.raises(ConfigurationError, match="mount takes an McpApp"):
        app.mount(object(), "thing")


async def test_name_budget_counts_the_client_prefix() -> None:
    app = parent(MCP_TOOL_NAME_LIMIT="30", MCP_TOOL_NAME_CLIENT_PREFIX="mcp__parent__")
    with pytest.raises(ConfigurationError) as e:
        app.mount(billing(), namespace="billing")
    msg = str(e.value)
    assert "'invoice_total'" in msg and "'billing_invoice_total'" in msg and "34 characters" in msg
    assert "mcp__parent__" in msg and "MCP_TOOL_NAME_LIMIT" in msg and "Fix:" in msg
    async with McpTestClient(app) as c:  # nothing of the failed mount is served
        assert {t["name"] for t in await c.list_tools()} == {"ping_parent"}


async def test_collision_names_both_sides_and_the_fix() -> None:
    app = parent()

    @app.tool(name="billing_invoice_total")
    def mine() -> str:
        """The parent's own."""
        return "the parent's"

    with pytest.raises(ConfigurationError) as e:
        app.mount(billing(), namespace="billing")
    msg = str(e.value)
    assert "mount 'billing' (app 'billing')" in msg and "the parent app 'parent'" in msg
    assert "'billing_invoice_total'" in msg and "the child's 'invoice_total'" in msg and "another namespace" in msg
    other = McpApp("x", settings=settings())

    @other.resource("data://billing/rates")
    def clash() -> str:
        """A clash."""
        return "x"

    app2 = parent()
    app2.mount(other, namespace="a")  # data://a/billing/rates: no clash
    with pytest.raises(ConfigurationError, match="namespace 'a' is already mounted"):
        app2.mount(billing(), namespace="a")


async def test_child_definitions_added_later_appear_with_list_changed() -> None:
    child = billing()
    app = parent()
    app.mount(child, namespace="billing")
    async with McpTestClient(app) as c:
        stream, events = await c.open_stream()
        try:
            @child.tool
            def refund(amount: int) -> int:
                """Refund."""
                return -amount

            assert (await next_note(events))["method"] == "notifications/tools/list_changed"
            assert "billing_refund" in {t["name"] for t in await c.list_tools()}
            assert (await c.call_tool("billing_refund", {"amount": 5}))["structuredContent"] == {"result": -5}
            child.remove_tool("refund")
            assert (await next_note(events))["method"] == "notifications/tools/list_changed"
            assert "billing_refund" not in {t["name"] for t in await c.list_tools()}
        finally:
            await stream.aclose()
