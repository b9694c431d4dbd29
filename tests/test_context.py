"""Context: identity, logging (dual sink, floor, redaction), state through ctx, helpers."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import pytest
from pydantic import BaseModel

from mcpcore import AuthInfo, Context, McpApp, McpError, Settings, create_request_context, tool, with_extra
from mcpcore.logs import JsonFormatter, redact
from mcpcore.testing import McpTestClient, create_mock_context, get_content_blocks, get_enrichment

pytestmark = pytest.mark.anyio


def test_redaction_matches_any_word_case_and_separator_insensitively() -> None:
    data = {"apiKey": "k", "API_KEY": "k", "x-api-key": "k", "accessToken": "t", "tokenCount": 3, "user": "ann",
            "nested": [{"password": "p", "ok": 1}], "Authorization": "Bearer x", "clientSecret": "s"}
    out = redact(data)
    assert out["user"] == "ann" and out["nested"][0]["ok"] == 1
    for key in ("apiKey", "API_KEY", "x-api-key", "accessToken", "tokenCount", "Authorization", "clientSecret"):
        assert out[key] == "[REDACTED]", key
    assert out["nested"][0]["password"] == "[REDACTED]"
    assert data["apiKey"] == "k"  # the caller's dict is untouched


async def test_log_is_mirrored_to_the_client_redacted_with_reserved_keys() -> None:
    ctx = create_mock_context()
    payload = {"query": "q", "apiKey": "secret", "message": "spoof"}
    ctx.log.info("Processing", payload)
    ctx.log.error("Upstream failed", RuntimeError("boom"), {"url": "u", "error": "spoof"})
    ctx.log.debug("kw form", attempt=2)
    assert payload == {"query": "q", "apiKey": "secret", "message": "spoof"}
    sent = [m["params"] for m in ctx.posted]
    assert sent[0] == {"level": "info", "logger": "test",
                       "data": {"query": "q", "apiKey": "[REDACTED]", "message": "Processing"}}
    assert sent[1]["level"] == "error" and sent[1]["data"]["error"] == "boom" and sent[1]["data"]["message"] == (
        "Upstream failed")
    assert sent[2]["data"] == {"attempt": 2, "message": "kw form"}


async def test_log_lines_carry_correlation_and_the_context_wins(caplog: pytest.LogCaptureFixture) -> None:
    ctx = with_extra(create_mock_context(request_id="req-1", tenant_id="acme"), attempt=3, requestId="spoofed")
    with caplog.at_level(logging.DEBUG, logger="mcpcore.handler"):
        ctx.log.info("hello", {"requestId": "spoofed", "token": "t"})
    rec = caplog.records[-1]
    fields = rec.fields  # type: ignore[attr-defined]
    assert fields["requestId"] == "req-1" and fields["tenantId"] == "acme" and fields["attempt"] == 3
    line = JsonFormatter().format(rec)
    assert '"token":"[REDACTED]"' in line and '"requestId":"req-1"' in line


async def test_client_level_only_narrows_the_floor() -> None:
    ctx = create_mock_context(log_level=logging.WARNING)
    ctx.log.info("dropped")
    ctx.log.warning("kept")
    assert [m["params"]["data"]["message"] for m in ctx.posted] == ["kept"]
    ctx = create_mock_context(log_level=None)
    ctx.log.error("never sent to a client that opted out")
    assert ctx.posted == []


def test_request_context_is_closed_and_children_merge_extra() -> None:
    ctx = create_mock_context(request_id="r1", session_id="s1")
    with pytest.raises(AttributeError):
        ctx.tenatId = "typo"  # type: ignore[attr-defined]
    child = create_request_context(parent_context=ctx, operation="processItem", additional_context={"itemId": 7})
    assert child.request_id == "r1" and child.session_id == "s1" and child.operation == "processItem"
    assert child.extra == {"itemId": 7}
    grandchild = with_extra(child, step=2)
    assert grandchild.extra == {"itemId": 7, "step": 2} and child.extra == {"itemId": 7}
    fresh = create_request_context(operation="bg")
    assert re.match(r"^[A-Z2-9]{5}-[A-Z2-9]{5}$", fresh.request_id)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", ctx.timestamp)


async def test_state_through_the_context_enforces_the_rules() -> None:
    class Item(BaseModel):
        name: str
        count: int

    ctx = create_mock_context()
    await ctx.state.set("item/1", {"name": "w", "count": 2})
    assert await ctx.state.get("item/1") == {"name": "w", "count": 2}
    assert await ctx.state.get("item/1", Item) == Item(name="w", count=2)
    with pytest.raises(McpError) as e:
        await ctx.state.set("item:1", 1)
    assert e.value.code == -32007
    with pytest.raises(McpError) as e:
        await ctx.state.set("bad", {1, 2})
    assert e.value.code == -32070
    assert await ctx.state.take("item/1") == {"name": "w", "count": 2}
    assert await ctx.state.take("item/1") is None
    await ctx.state.set_many({"a/1": 1, "a/2": 2, "b/1": 3})
    page = await ctx.state.list("a/", limit=1)
    assert page.items == [("a/1", 1)] and page.cursor
    page = await ctx.state.list("a/", cursor=page.cursor, limit=1)
    assert page.items == [("a/2", 2)] and page.cursor is None
    assert await ctx.state.get_many(["a/1", "b/1", "zz"]) == {"a/1": 1, "b/1": 3}
    assert await ctx.state.delete_many(["a/1", "a/2", "nope"]) == 2
    no_tenant = create_mock_context(tenant_id=None)
    with pytest.raises(McpError) as e:
        await no_tenant.state.get("x")
    assert e.value.code == -32600


async def test_enrich_and_content_helpers_for_unit_tests() -> None:
    ctx = create_mock_context()
    ctx.enrich.total(3)
    ctx.enrich(custom=1)
    ctx.content.audio(b"RIFF", "audio/wav")
    assert get_enrichment(ctx) == {"totalCount": 3, "custom": 1}
    assert get_content_blocks(ctx) == [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}]


async def test_identity_fields_in_a_real_request() -> None:
    seen: dict[str, Any] = {}

    @tool
    def who(ctx: Context) -> str:
        """Doc."""
        seen.update(request_id=ctx.request_id, tenant=ctx.tenant_id, session=ctx.session_id, auth=ctx.auth,
                    caps=ctx.client_capabilities, op=ctx.operation, version=ctx.protocol_version)
        return "ok"

    app = McpApp("t", "1", tools=[who], settings=Settings.from_env({}))
    async with McpTestClient(app, capabilities={"elicitation": {}, "roots": {"listChanged": True}}) as c:
        await c.request("tools/call", {"name": "who"}, request_id="abc-1")
        assert seen["request_id"] == "abc-1" and seen["tenant"] == "default" and seen["session"] == c.session_id
        assert seen["auth"] is None and seen["op"] == "tool:who" and seen["version"] == "2025-11-25"
        assert seen["caps"] == {"elicitation": {"form": {}}, "roots": {"listChanged": True}}
    stateless = McpApp("t", "1", tools=[who], settings=Settings.from_env({}, session_mode="stateless"))
    async with McpTestClient(stateless) as c:
        await c.call_tool("who")
        assert seen["session"] is None and seen["caps"] is None


async def test_stateless_session_id_is_per_request_when_exposed() -> None:
    seen: list[str | None] = []

    @tool
    def who(ctx: Context) -> str:
        """Doc."""
        seen.append(ctx.session_id)
        return "ok"

    by_code = McpApp("t", "1", tools=[who], settings=Settings.from_env({}, session_mode="stateless"),
                     expose_stateless_session_id=True)
    by_env = McpApp("t", "1", tools=[who], settings=Settings.from_env(
        {"MCP_SESSION_MODE": "stateless", "MCP_EXPOSE_STATELESS_SESSION_ID": "true"}))
    for app in (by_code, by_env):
        seen.clear()
        async with McpTestClient(app) as c:
            assert c.session_id is None  # still no Mcp-Session-Id: nothing is kept between requests
            await c.call_tool("who")
            await c.call_tool("who")
        assert all(s is not None and len(s) == 64 for s in seen) and seen[0] != seen[1]
    stateful = McpApp("t", "1", tools=[who], settings=Settings.from_env({}), expose_stateless_session_id=True)
    seen.clear()
    async with McpTestClient(stateful) as c:
        await c.call_tool("who")
        await c.call_tool("who")
        assert seen == [c.session_id, c.session_id]
    async with McpTestClient(by_code, era="modern") as c:  # 2026-07-28 has no sessions at all
        await c.call_tool("who")
        assert seen[-1] is None


async def test_progress_without_a_token_is_a_no_op_and_signal_waits() -> None:
    ctx = create_mock_context()
    await ctx.report_progress(1, 2)
    assert ctx.posted == []
    ctx = create_mock_context(progress_token="t")
    await ctx.report_progress(1, 2, "half")
    assert ctx.posted[0]["params"] == {"progressToken": "t", "progress": 1, "total": 2, "message": "half"}
    waiter = asyncio.create_task(ctx.signal.wait())
    await asyncio.sleep(0)
    ctx._req.signal.abort("stop")
    await asyncio.wait_for(waiter, 1)
    assert ctx.signal.aborted and ctx.signal.reason == "stop"


def test_auth_info_sub_alias() -> None:
    a = AuthInfo(client_id="c", scopes=("s",), subject="u")
    assert a.sub == "u" and "token" not in repr(AuthInfo(client_id="c", token="secret"))


def test_inbound_received_sets_every_slot_as_the_constructor_does() -> None:
    from mcpcore.context import ContextServices, Inbound
    from mcpcore.protocol.versions import Era

    services = ContextServices()
    auth = AuthInfo(client_id="c", tenant_id="t")
    fields = ("tools/call", 7, Era.MODERN, services, auth, "t")
    built = Inbound(*fields, protocol_version="2026-07-28", client_capabilities={"roots": {}},
                    client_info={"name": "x"}, client_log_level=3, meta={"k": 1})
    received = Inbound.received(*fields, "2026-07-28", {"roots": {}}, {"name": "x"}, 3, {"k": 1})
    for name in Inbound.__slots__:
        if name != "started":  # the time each was made
            assert getattr(received, name) == getattr(built, name), name
    assert abs(received.started - built.started) < 5
