"""Streamable HTTP, 2025 era: sessions, statuses, JSON vs SSE, streams, cancellation."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore import Context, McpApp, McpError, Settings, tool
from mcpcore.sessions.base import SESSION_ID_RE, is_session_id
from mcpcore.testing import McpTestClient, parse_sse

from .conftest import example_app

pytestmark = pytest.mark.anyio

H = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


async def test_initialize_mints_a_session_and_negotiates_the_version() -> None:
    async with McpTestClient(example_app()) as c:
        assert c.session_id is not None and len(c.session_id) == 64
        assert c.init_result is not None
        assert c.init_result["protocolVersion"] == "2025-11-25"
        assert c.init_result["serverInfo"] == {"name": "mcpcore-everything", "version": "1.0.0"}
        caps = c.init_result["capabilities"]
        assert caps["tools"] == {"listChanged": True}
        assert caps["resources"] == {"subscribe": True, "listChanged": True}
        assert "logging" in caps and "completions" in caps


@pytest.mark.parametrize("offered,expected", [("2025-03-26", "2025-03-26"), ("2025-06-18", "2025-06-18"),
                                              ("2024-11-05", "2024-11-05"), ("2099-01-01", "2025-11-25"),
                                              ("2026-07-28", "2025-11-25")])
async def test_initialize_counter_offers_an_unknown_version(offered: str, expected: str) -> None:
    async with McpTestClient(example_app(), protocol_version=offered) as c:
        assert c.init_result is not None and c.init_result["protocolVersion"] == expected


async def test_ping_and_set_level_return_empty_results() -> None:
    async with McpTestClient(example_app()) as c:
        assert await c.request("ping") == {}
        assert await c.request("logging/setLevel", {"level": "debug"}) == {}
        with pytest.raises(McpError) as e:
            await c.request("logging/setLevel", {"level": "loud"})
        assert e.value.code == -32602


async def test_missing_session_is_400_and_unknown_session_is_404() -> None:
    app = example_app(session_mode="stateful")
    async with McpTestClient(app) as c:
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        r = await c.post(body, H)
        assert r.status_code == 400
        assert r.json()["error"]["code"] == -32600
        r = await c.post(body, {**H, "mcp-session-id": "f" * 64})
        assert r.status_code == 404
        r = await c.post(body, {**H, "mcp-session-id": "not-a-session"})
        assert r.status_code == 404
        assert c.session_id is not None
        for near in (c.session_id.upper(), c.session_id[:-1] + "g", c.session_id[:-1].encode() + b"\xe9"):
            r = await c.post(body, {**H, "mcp-session-id": near})
            assert r.status_code == 404, near


@given(st.one_of(st.text(max_size=70), st.text("0123456789abcdefABCDEF\n \u00e9", min_size=62, max_size=66)))
def test_session_id_form_is_the_regex_full_match(value: str) -> None:
    assert is_session_id(value) == (SESSION_ID_RE.fullmatch(value) is not None)


async def test_answers_do_not_repeat_the_session_id() -> None:
    """Only the answer to initialize carries Mcp-Session-Id; the client sends it, not the server."""
    async with McpTestClient(example_app(session_mode="stateful")) as c:
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        r = await c.post(body, {**H, "mcp-session-id": c.session_id or ""})
        assert r.status_code == 200 and "mcp-session-id" not in r.headers


async def test_auto_mode_serves_sessionless_requests() -> None:
    async with McpTestClient(example_app(session_mode="auto"), initialize=False) as c:
        r = await c.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, H)
        assert r.status_code == 200
        assert any(t["name"] == "search" for t in r.json()["result"]["tools"])


async def test_stateless_mode_mints_no_session_and_refuses_get_and_delete() -> None:
    async with McpTestClient(example_app(session_mode="stateless")) as c:
        assert c.session_id is None
        assert (await c.request("tools/list"))["tools"]
        r = await c.http.get(c.url, headers={"accept": "text/event-stream"})
        assert r.status_code == 405
        r = await c.http.delete(c.url)
        assert r.status_code == 405


@pytest.mark.parametrize("headers,status", [
    ({"content-type": "text/plain", "accept": "application/json, text/event-stream"}, 415),
    ({"content-type": "application/json", "accept": "application/json"}, 406),
    ({"content-type": "application/json", "accept": "text/html"}, 406),
])
async def test_media_type_checks(headers: dict[str, str], status: int) -> None:
    async with McpTestClient(example_app(), initialize=False) as c:
        r = await c.post(INIT, headers)
        assert r.status_code == status
        assert r.json()["error"]["code"] == -32600


async def test_bad_json_is_400_parse_error_without_id() -> None:
    async with McpTestClient(example_app(), initialize=False) as c:
        r = await c.post(b'{"jsonrpc": "2.0", "id": 1, "method": ', H)
        assert r.status_code == 400
        body = r.json()
        assert body["error"]["code"] == -32700 and "id" not in body


@pytest.mark.parametrize("msg,code", [
    ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, -32600),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, -32600),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, -32600),
    ({"jsonrpc": "2.0", "id": 1, "method": 7}, -32600),
    ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, -32602),
    (b'"just a string"', -32600),
    ({"jsonrpc": "2.0"}, -32600),
])
async def test_invalid_messages_are_400(msg: object, code: int) -> None:
    async with McpTestClient(example_app(), initialize=False) as c:
        r = await c.post(msg, H)
        assert r.status_code == 400
        assert r.json()["error"]["code"] == code


async def test_body_limit_counts_streamed_bytes_and_content_length() -> None:
    app = example_app(max_body_bytes=200)
    async with McpTestClient(app, initialize=False) as c:
        big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "y" * 400}}
        r = await c.post(big, H)
        assert r.status_code == 413

        async def chunks():  # no Content-Length: counted as it streams
            yield b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "'
            for _ in range(10):
                yield b"y" * 50
            yield b'"}}'
        r = await c.http.post(c.url, content=chunks(), headers=H)
        assert r.status_code == 413


async def test_bad_protocol_version_header_is_400() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
                         {**c.headers(), "mcp-protocol-version": "1999-01-01"})
        assert r.status_code == 400


async def test_origin_and_host_guard() -> None:
    async with McpTestClient(example_app(), initialize=False) as c:
        r = await c.post(INIT, {**H, "origin": "http://evil.example.com"})
        assert r.status_code == 403
        r = await c.post(INIT, {**H, "host": "evil.example.com"})
        assert r.status_code == 403
        r = await c.post(INIT, {**H, "origin": "http://localhost:3000"})
        assert r.status_code == 200
    async with McpTestClient(example_app(allowed_origins=("https://app.example.com",)), initialize=False) as c:
        r = await c.post(INIT, {**H, "origin": "https://app.example.com"})
        assert r.status_code == 200


async def test_public_bind_accepts_any_host_unless_hosts_are_configured() -> None:
    async with McpTestClient(example_app(), url="http://mcp.example.com/mcp", initialize=False) as c:
        r = await c.post(INIT, H)
        assert r.status_code == 200
    app = example_app(allowed_hosts=("api.example.com",))
    async with McpTestClient(app, url="http://mcp.example.com/mcp", initialize=False) as c:
        r = await c.post(INIT, H)
        assert r.status_code == 403
    async with McpTestClient(app, url="http://api.example.com/mcp", initialize=False) as c:
        r = await c.post(INIT, H)
        assert r.status_code == 200


async def test_notifications_and_responses_are_accepted_with_202() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.notify("notifications/progress", {"progressToken": 1, "progress": 1})
        assert r.status_code == 202 and r.content == b""
        r = await c.post({"jsonrpc": "2.0", "id": "unknown", "result": {}}, c.headers())
        assert r.status_code == 202


async def test_plain_result_is_json_and_emitting_first_switches_to_sse() -> None:
    async with McpTestClient(example_app()) as c:
        body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "test_simple_text"}}
        r = await c.post(body, c.headers())
        assert r.headers["content-type"] == "application/json"
        body = {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "test_tool_with_logging"}}
        r = await c.post(body, c.headers())
        assert r.headers["content-type"].startswith("text/event-stream")
        events = [e async for e in parse_sse(_lines(r.text))]
        import orjson
        assert events[0]["data"] == "" and events[0]["id"] and events[0]["retry"] == "1000"  # the priming event
        msgs = [orjson.loads(e["data"]) for e in events[1:]]
        assert all(e["id"].count("_") == 1 for e in events)
        assert [m.get("method") for m in msgs[:3]] == ["notifications/message"] * 3
        assert msgs[-1]["id"] == 10 and "result" in msgs[-1]


async def _lines(text: str):
    for line in text.splitlines():
        yield line
    yield ""


async def test_log_notifications_follow_the_session_level_and_the_floor() -> None:
    async with McpTestClient(example_app(log_level="info")) as c:
        await c.request("logging/setLevel", {"level": "warning"})
        await c.call_tool("test_tool_with_logging")
        assert c.messages == []
        await c.request("logging/setLevel", {"level": "debug"})
        await c.call_tool("test_tool_with_logging")
        assert [m["params"]["data"]["message"] for m in c.messages] == [
            "Tool execution started", "Tool processing data", "Tool execution completed"]
        assert all(m["params"]["level"] == "info" for m in c.messages)
    async with McpTestClient(example_app(log_level="warning")) as c:
        await c.request("logging/setLevel", {"level": "debug"})
        await c.call_tool("test_tool_with_logging")
        assert c.messages == []


async def test_progress_is_sent_only_with_a_token() -> None:
    async with McpTestClient(example_app()) as c:
        await c.call_tool("test_tool_with_progress", progress_token="p-1")
        progress = [m["params"] for m in c.messages if m["method"] == "notifications/progress"]
        assert [p["progress"] for p in progress] == [0, 50, 100]
        assert all(p["progressToken"] == "p-1" and p["total"] == 100 for p in progress)
        c.messages.clear()
        await c.call_tool("test_tool_with_progress")
        assert c.messages == []


async def test_delete_ends_the_session() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.delete_session()
        assert r.status_code == 200
        r = await c.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, c.headers())
        assert r.status_code == 404
        r = await c.delete_session()
        assert r.status_code == 404


async def test_delete_without_session_is_400() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.http.delete(c.url)
        assert r.status_code == 400


async def test_session_capacity_evicts_idle_sessions_before_refusing() -> None:
    app = example_app(max_sessions=2)
    clients = [McpTestClient(app) for _ in range(3)]
    for cl in clients:
        await cl.__aenter__()
    try:
        assert await app.sessions.count() == 2
        r = await clients[0].post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, clients[0].headers())
        assert r.status_code == 404  # the least recently used idle session made room
        assert (await clients[2].list_tools())
    finally:
        for cl in clients:
            await cl.__aexit__()


async def test_session_capacity_is_503_when_every_session_is_busy() -> None:
    app = example_app(max_sessions=1)
    async with McpTestClient(app) as c:
        resp, _events = await c.open_stream()
        try:
            r = await c.post(INIT, H)
            assert r.status_code == 503
            assert r.json()["error"]["data"]["reason"] == "session_capacity"
        finally:
            await resp.aclose()


async def test_idle_sessions_expire() -> None:
    app = example_app(session_idle_ms=1000)
    async with McpTestClient(app) as c:
        rec = await app.sessions.get(c.session_id)
        rec.last_seen -= 5
        r = await c.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, c.headers())
        assert r.status_code == 404


async def test_get_stream_receives_list_changes_and_subscribed_updates_only() -> None:
    app = example_app()
    async with McpTestClient(app) as a, McpTestClient(app) as b:
        resp, events = await a.open_stream()
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        try:
            second = await a.http.get(a.url, headers={**a.headers(), "accept": "text/event-stream"})
            assert second.status_code == 409
            primer = await asyncio.wait_for(events.__anext__(), 5)
            assert primer["data"] == "" and primer["id"].startswith("g_")
            await app.notify.tools_changed()
            ev = await asyncio.wait_for(events.__anext__(), 5)
            assert '"notifications/tools/list_changed"' in ev["data"]
            await app.notify.resource_updated("test://watched-resource")  # a is not subscribed
            await a.request("resources/subscribe", {"uri": "test://watched-resource"})
            await b.call_tool("update_watched_resource")  # another session changes it
            ev = await asyncio.wait_for(events.__anext__(), 5)
            assert '"notifications/resources/updated"' in ev["data"] and "watched-resource" in ev["data"]
        finally:
            await resp.aclose()


async def test_own_notification_goes_on_the_request_stream_not_twice() -> None:
    app = example_app()
    async with McpTestClient(app) as c:
        await c.request("resources/subscribe", {"uri": "test://watched-resource"})
        await c.call_tool("update_watched_resource")
        assert [m["method"] for m in c.messages] == ["notifications/resources/updated"]
        await c.request("resources/unsubscribe", {"uri": "test://watched-resource"})
        c.messages.clear()
        await c.call_tool("update_watched_resource")
        assert c.messages == []


async def test_get_requires_event_stream_accept_and_a_session() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.http.get(c.url, headers={"accept": "application/json", "mcp-session-id": c.session_id})
        assert r.status_code == 406
        r = await c.http.get(c.url, headers={"accept": "text/event-stream"})
        assert r.status_code == 400
        r = await c.http.get(c.url, headers={"accept": "text/event-stream", "mcp-session-id": "0" * 64})
        assert r.status_code == 404


async def test_cancellation_stops_the_handler_and_fires_the_signal() -> None:
    seen: dict[str, object] = {}

    @tool
    async def slow(ctx: Context) -> str:
        """Wait until cancelled."""
        seen["started"] = True
        try:
            await asyncio.sleep(30)
        finally:
            seen["aborted"] = ctx.signal.aborted
        return "never"

    app = McpApp("t", "1", tools=[slow], settings=Settings.from_env({}))
    async with McpTestClient(app) as c:
        call = asyncio.create_task(c.request("tools/call", {"name": "slow"}, request_id="call-1"))
        for _ in range(100):
            if seen.get("started"):
                break
            await asyncio.sleep(0.01)
        await c.notify("notifications/cancelled", {"requestId": "call-1", "reason": "user"})
        with pytest.raises(McpError) as e:
            await asyncio.wait_for(call, 5)
        assert e.value.code == -32011
        assert seen["aborted"] is True


async def test_batches_only_on_2025_03_26() -> None:
    async with McpTestClient(example_app(), protocol_version="2025-03-26") as c:
        batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_simple_text"}},
                 {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}]
        r = await c.post(batch, c.headers())
        assert r.status_code == 200
        replies = {m["id"]: m for m in r.json()}
        assert replies[1]["result"] == {} and "content" in replies[2]["result"]
        r = await c.post([INIT], c.headers())
        assert r.json()[0]["error"]["code"] == -32600
    async with McpTestClient(example_app()) as c:
        r = await c.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], c.headers())
        assert r.status_code == 400


async def test_unknown_method_is_a_json_rpc_error_with_request_id() -> None:
    async with McpTestClient(example_app()) as c:
        with pytest.raises(McpError) as e:
            await c.request("nope/nothing", request_id="abc")
        assert e.value.code == -32601
        assert e.value.data == {"requestId": "abc"}
        with pytest.raises(McpError) as e:
            await c.request("nope/nothing", request_id=7)
        assert len(e.value.data["requestId"]) == 11 and e.value.data["requestId"][5] == "-"


async def test_healthz_and_unknown_paths() -> None:
    async with McpTestClient(example_app(), initialize=False) as c:
        r = await c.http.get("http://127.0.0.1:8000/healthz")
        assert r.status_code == 200 and r.json() == {"status": "ok"}
        r = await c.http.get("http://127.0.0.1:8000/elsewhere")
        assert r.status_code == 404
        r = await c.http.put(c.url)
        assert r.status_code == 405
