"""2026-07-28 on the same endpoint: classification, envelope, headers, errors, discovery,
caching hints, listen streams, and one handler serving both eras."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from mcpcore import CacheHint, Context, McpApp, McpError, Settings, resource, tool
from mcpcore.testing import McpTestClient, parse_sse

from .conftest import example_app

pytestmark = pytest.mark.anyio

PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
META = {PV: "2026-07-28", CC: {}}
EVERY_VERSION = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


def headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
         "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if name is not None:
        h["mcp-name"] = name
    h.update(extra)
    return h


async def post(c: McpTestClient, body: dict[str, Any], h: dict[str, str]) -> tuple[int, dict[str, Any]]:
    r = await c.post(body, h)
    return r.status_code, r.json()


async def test_discover_lists_versions_capabilities_and_server_info() -> None:
    async with McpTestClient(example_app(), era="modern") as c:
        r = await c.request("server/discover")
        assert r["supportedVersions"] == EVERY_VERSION and r["resultType"] == "complete"
        assert r["capabilities"]["tools"] == {"listChanged": True} and r["instructions"] == "test"
        assert r["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "mcpcore-everything", "version": "1.0.0"}
        assert r["ttlMs"] == 0 and r["cacheScope"] == "private"


async def test_envelope_errors_have_their_codes_and_statuses() -> None:
    async with McpTestClient(example_app(), era="modern") as c:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {PV: "2026-07-28"}}}
        status, r = await post(c, body, headers("tools/list"))
        assert status == 400 and r["error"]["code"] == -32602 and r["id"] == 1
        body["params"] = {}
        status, r = await post(c, body, headers("tools/list"))
        assert status == 400 and r["error"]["code"] == -32602
        body["params"] = {"_meta": {PV: "1999-01-01", CC: {}}}
        status, r = await post(c, body, headers("tools/list", **{"mcp-protocol-version": "1999-01-01"}))
        assert status == 400 and r["error"]["code"] == -32022
        assert r["error"]["data"]["supported"] == EVERY_VERSION and r["error"]["data"]["requested"] == "1999-01-01"
        body["params"] = {"_meta": {**META, "io.modelcontextprotocol/logLevel": "loud"}}
        status, r = await post(c, body, headers("tools/list"))
        assert status == 400 and r["error"]["code"] == -32602


@pytest.mark.parametrize("method,h,code", [
    ("tools/list", {"mcp-method": "prompts/list"}, -32020),
    ("tools/list", {"mcp-protocol-version": "2025-11-25"}, -32020),
    ("tools/call", {"mcp-name": "other"}, -32020),
    ("tools/call", {"mcp-name": None}, -32020),
    ("tools/call", {"mcp-method": None}, -32020),
])
async def test_header_mismatch(method: str, h: dict[str, str | None], code: int) -> None:
    async with McpTestClient(example_app(), era="modern") as c:
        params: dict[str, Any] = {"_meta": META}
        if method == "tools/call":
            params["name"] = "test_simple_text"
        hh = headers(method, "test_simple_text" if method == "tools/call" else None)
        for k, v in h.items():
            if v is None:
                hh.pop(k, None)
            else:
                hh[k] = v
        status, r = await post(c, {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}, hh)
        assert status == 400 and r["error"]["code"] == code


async def test_header_values_may_be_base64_and_param_headers_are_checked() -> None:
    async with McpTestClient(example_app(), era="modern") as c:
        def call(args: dict[str, Any], **h: str) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"_meta": META, "name": "test_x_mcp_header", "arguments": args}}

        enc = "=?base64?" + base64.b64encode(b"test_x_mcp_header").decode() + "?="
        status, r = await post(c, call({"region": "eu"}), headers("tools/call", enc, **{"mcp-param-region": "eu"}))
        assert status == 200 and r["result"]["content"][0]["text"] == "status in eu"
        region = "=?base64?" + base64.b64encode("日本".encode()).decode() + "?="
        status, r = await post(c, call({"region": "日本"}), headers("tools/call", "test_x_mcp_header",
                                                                   **{"mcp-param-region": region}))
        assert status == 200
        status, r = await post(c, call({"region": "eu"}), headers("tools/call", "test_x_mcp_header"))
        assert status == 400 and r["error"]["code"] == -32020
        status, r = await post(c, call({"region": "eu"}), headers("tools/call", "test_x_mcp_header",
                                                                 **{"mcp-param-region": "us"}))
        assert status == 400 and r["error"]["code"] == -32020
        status, r = await post(c, call({"region": "Hello"}), headers("tools/call", "test_x_mcp_header",
                                                                    **{"mcp-param-region": "=?base64?SGVsbG8?="}))
        assert status == 400


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe",
                                    "resources/unsubscribe", "no/such"])
async def test_removed_and_unknown_methods_are_404(method: str) -> None:
    async with McpTestClient(example_app(), era="modern") as c:
        status, r = await post(c, {"jsonrpc": "2.0", "id": "x", "method": method, "params": {"_meta": META}},
                               headers(method))
        assert status == 404 and r["error"]["code"] == -32601 and r["id"] == "x"


async def test_results_carry_result_type_meta_and_cache_hints() -> None:
    app = example_app()
    app.dispatcher.cache_hints["tools/list"] = CacheHint(60_000, "public")
    async with McpTestClient(app, era="modern") as c:
        r = await c.request("tools/list")
        assert r["resultType"] == "complete" and r["ttlMs"] == 60_000 and r["cacheScope"] == "public"
        for method, params in (("prompts/list", {}), ("resources/list", {}), ("resources/templates/list", {}),
                               ("resources/read", {"uri": "test://static-text"})):
            r = await c.request(method, params)
            assert r["resultType"] == "complete" and "ttlMs" in r and r["cacheScope"] in ("public", "private")
        r = await c.call_tool("test_simple_text")
        assert r["resultType"] == "complete" and "ttlMs" not in r
        assert r["_meta"]["io.modelcontextprotocol/serverInfo"]["version"] == "1.0.0"


async def test_per_resource_cache_hint_overrides_the_default() -> None:
    @resource("cfg://app", cache_hint=CacheHint(5000, "public"))
    def cfg() -> str:
        return "x"

    app = McpApp("t", "1", resources=[cfg], settings=Settings.from_env({}))
    async with McpTestClient(app, era="modern") as c:
        r = await c.read_resource("cfg://app")
        assert (r["ttlMs"], r["cacheScope"]) == (5000, "public")


async def test_resource_not_found_is_32602_with_the_uri() -> None:
    async with McpTestClient(example_app(), era="modern") as c:
        with pytest.raises(McpError) as e:
            await c.read_resource("test://nope")
        assert e.value.code == -32602 and e.value.data["uri"] == "test://nope"


async def test_logs_reach_the_client_only_when_the_request_opts_in() -> None:
    async with McpTestClient(example_app(), era="modern") as c:
        await c.call_tool("test_logging_tool")
        assert c.messages == []
    async with McpTestClient(example_app(), era="modern", log_level="info") as c:
        await c.call_tool("test_logging_tool")
        assert [m["params"]["level"] for m in c.messages] == ["info"] * 3
    async with McpTestClient(example_app(), era="modern", log_level="error") as c:
        await c.call_tool("test_logging_tool")
        assert c.messages == []


async def test_client_capabilities_are_the_envelope_as_sent_and_no_session() -> None:
    seen: dict[str, Any] = {}

    @tool
    def probe(ctx: Context) -> str:
        """Doc."""
        seen.update(caps=ctx.client_capabilities, session=ctx.session_id, version=ctx.protocol_version)
        return "ok"

    app = McpApp("t", "1", tools=[probe], settings=Settings.from_env({}))
    async with McpTestClient(app, era="modern", capabilities={"elicitation": {}}) as c:
        await c.call_tool("probe")
    assert seen == {"caps": {"elicitation": {}}, "session": None, "version": "2026-07-28"}


async def test_a_session_request_without_a_modern_version_stays_in_its_session() -> None:
    async with McpTestClient(example_app()) as c:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                "params": {"_meta": {PV: "2025-11-25", "progressToken": 1}}}
        r = await c.post(body, c.headers())
        assert r.status_code == 200 and "resultType" not in r.json()["result"]


async def test_the_envelope_wins_over_a_session_id_live_or_deleted() -> None:
    app = example_app()
    async with McpTestClient(app) as c:
        sid = c.session_id
        assert sid is not None
        for deleted in (False, True):
            if deleted:
                assert (await c.delete_session()).status_code == 200
                assert (await c.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, c.headers())).status_code \
                    == 404
            h = {**headers("server/discover"), "mcp-session-id": sid}
            status, r = await post(c, {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                       "params": {"_meta": META}}, h)
            assert status == 200 and r["result"]["supportedVersions"] == EVERY_VERSION
            h = {**headers("tools/call", "test_simple_text"), "mcp-session-id": sid}
            resp = await c.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                 "params": {"_meta": META, "name": "test_simple_text"}}, h)
            assert resp.status_code == 200 and resp.json()["result"]["resultType"] == "complete"
            assert "mcp-session-id" not in resp.headers
            h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                 "mcp-session-id": sid}  # the envelope without its header mirror: its own answer, not the session's
            status, r = await post(c, {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": META}}, h)
            assert status == 400 and r["error"]["code"] == -32020
            assert r["error"]["message"] == "Header mismatch: missing MCP-Protocol-Version header"


@pytest.mark.parametrize("header,meta", [("2025-11-25", "2026-07-28"), ("2026-07-28", "2025-11-25"),
                                         ("2025-11-25", "2031-01-01")])
async def test_session_header_and_envelope_disagreeing_is_a_mismatch(header: str, meta: str) -> None:
    async with McpTestClient(example_app()) as c:
        h = {**headers("tools/list"), "mcp-session-id": c.session_id or "", "mcp-protocol-version": header}
        status, r = await post(c, {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                   "params": {"_meta": {PV: meta, CC: {}}}}, h)
        assert status == 400 and r["error"]["code"] == -32020
        assert r["error"]["message"] == (f"Header mismatch: MCP-Protocol-Version header value '{header}' "
                                         f"does not match body value '{meta}'")


@pytest.mark.parametrize("h", [{}, headers("initialize"), {"mcp-protocol-version": "2025-11-25"}])
@pytest.mark.parametrize("asked", ["2025-11-25", "2026-07-28"])
async def test_initialize_carrying_the_envelope_is_a_2025_initialize(h: dict[str, str], asked: str) -> None:
    async with McpTestClient(example_app(), era="modern") as c:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"},
            "_meta": {**META, "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}}
        resp = await c.post(body, {"content-type": "application/json",
                                   "accept": "application/json, text/event-stream", **h})
        assert resp.status_code == 200, resp.text
        result = resp.json()["result"]
        assert result["protocolVersion"] == "2025-11-25" and "resultType" not in result
        sid = resp.headers["mcp-session-id"]
        r = await c.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                         {"content-type": "application/json", "accept": "application/json, text/event-stream",
                          "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
        assert r.status_code == 200 and "resultType" not in r.json()["result"]


async def test_one_handler_serves_both_eras_identically_apart_from_the_envelope() -> None:
    class Out(BaseModel):
        text: str
        caps: list[str]

    @tool
    def same(text: str, ctx: Context) -> Out:
        """Echo the text and the declared capabilities."""
        ctx.enrich.notice("ignored without an enrichment block")
        return Out(text=text, caps=sorted(ctx.client_capabilities or {}))

    app = McpApp("t", "1", tools=[same], settings=Settings.from_env({}))
    results = []
    for era in ("legacy", "modern"):
        async with McpTestClient(app, era=era, capabilities={"roots": {}}) as c:
            r = await c.call_tool("same", {"text": "hi"})
            results.append({k: v for k, v in r.items() if k not in ("resultType", "_meta")})
            assert ("resultType" in r) is (era == "modern")
    assert results[0] == results[1] == {"content": [{"type": "text", "text": '{"text":"hi","caps":["roots"]}'}],
                                        "structuredContent": {"text": "hi", "caps": ["roots"]}}


async def test_structured_content_may_be_any_json_on_2026() -> None:
    @tool
    def nums() -> list[int]:
        """Doc."""
        return [1, 2]

    app = McpApp("t", "1", tools=[nums], settings=Settings.from_env({}))
    async with McpTestClient(app, era="modern") as c:
        assert (await c.call_tool("nums"))["structuredContent"] == [1, 2]
        schema = (await c.list_tools())[0]["outputSchema"]
        assert schema == {"type": "array", "items": {"type": "integer"}}
    async with McpTestClient(app) as c:
        assert (await c.call_tool("nums"))["structuredContent"] == {"result": [1, 2]}
        assert (await c.list_tools())[0]["outputSchema"]["properties"]["result"]["type"] == "array"


async def _listen(c: McpTestClient, flt: dict[str, Any], rid: str = "listen-1") -> tuple[Any, Any]:
    body = {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen",
            "params": {"_meta": META, "notifications": flt}}
    req = c.http.build_request("POST", c.url, content=orjson.dumps(body), headers=headers("subscriptions/listen"))
    resp = await c.http.send(req, stream=True)
    return resp, parse_sse(resp.aiter_lines())


async def test_listen_acknowledges_then_delivers_only_what_was_asked() -> None:
    app = example_app()
    async with McpTestClient(app, era="modern") as c:
        resp, events = await _listen(c, {"toolsListChanged": True, "promptsListChanged": False,
                                         "resourceSubscriptions": ["test://watched-resource"], "bogus": True})
        try:
            ack = orjson.loads((await asyncio.wait_for(events.__anext__(), 5))["data"])
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"] == {"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"},
                                     "notifications": {"toolsListChanged": True,
                                                       "resourceSubscriptions": ["test://watched-resource"]}}
            await c.call_tool("test_trigger_prompt_change")  # not asked for
            await app.notify.resource_updated("test://other")  # not subscribed
            await c.call_tool("test_trigger_tool_change")
            await app.notify.resource_updated("test://watched-resource")
            got = [orjson.loads((await asyncio.wait_for(events.__anext__(), 5))["data"]) for _ in range(2)]
            assert [m["method"] for m in got] == ["notifications/tools/list_changed", "notifications/resources/updated"]
            assert all(m["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "listen-1"} for m in got)
            assert got[1]["params"]["uri"] == "test://watched-resource"
        finally:
            await resp.aclose()


async def test_listen_ends_gracefully_at_shutdown() -> None:
    app = example_app()
    async with McpTestClient(app, era="modern") as c:
        resp, events = await _listen(c, {"toolsListChanged": True}, rid="L2")
        await asyncio.wait_for(events.__anext__(), 5)
        await app.shutdown()
        last = orjson.loads((await asyncio.wait_for(events.__anext__(), 5))["data"])
        assert last == {"jsonrpc": "2.0", "id": "L2", "result": {
            "_meta": {"io.modelcontextprotocol/subscriptionId": "L2",
                      "io.modelcontextprotocol/serverInfo": {"name": "mcpcore-everything", "version": "1.0.0"}},
            "resultType": "complete"}}
        await resp.aclose()


async def test_a_2026_handler_notification_goes_to_listen_streams_not_its_response() -> None:
    app = example_app()
    async with McpTestClient(app, era="modern") as c:
        r = await c.call_tool("test_trigger_tool_change")
        assert "content" in r and c.messages == []
