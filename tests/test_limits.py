"""Ceilings on everything a caller sends: batches, ids, tokens, names, URIs, subscriptions,
client metadata, event-buffer bytes, streams per session and slow readers; sessions of other
identities are never evicted while recent; template variables are checked after decoding;
malformed Last-Event-IDs are unknown ids; resource updates stay in their tenant."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import jwt
import pytest

from mcpcore import McpError
from mcpcore.protocol.jsonrpc import InvalidMessage, classify_message
from mcpcore.queues import BoundedQueue
from mcpcore.sessions.events import MemoryEventBuffer
from mcpcore.testing import McpTestClient, tool_error
from mcpcore.transports.exchange import HttpExchange
from tests.conftest import example_app

pytestmark = pytest.mark.anyio
SECRET = "l" * 40
PING = {"jsonrpc": "2.0", "method": "ping"}


def token(sub: str, tid: str = "acme", **extra: Any) -> str:
    claims = {"sub": sub, "cid": "app", "tid": tid, "exp": int(time.time()) + 300, **extra}
    return jwt.encode(claims, SECRET, algorithm="HS256")


def bearer(sub: str, tid: str = "acme") -> dict[str, str]:
    return {"authorization": f"Bearer {token(sub, tid)}"}


# -- batches --------------------------------------------------------------------------------------

async def test_batches_are_capped_in_messages_and_response_bytes() -> None:
    app = example_app(max_batch_messages=20, max_batch_response_bytes=4096)
    async with McpTestClient(app, protocol_version="2025-03-26") as c:
        r = await c.post([{**PING, "id": i} for i in range(21)], c.headers())
        assert r.status_code == 400 and "at most 20 messages" in r.json()["error"]["message"]
        r = await c.post([{**PING, "id": 1}, {**PING, "id": 1}, {**PING, "id": 2}], c.headers())
        replies = r.json()
        assert len(replies) == 3 and sorted(m["id"] for m in replies) == [1, 1, 2]
        assert sum("error" in m and "Duplicate" in m["error"]["message"] for m in replies) == 1
        lists = [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(10)]
        r = await c.post(lists, c.headers())
        assert len(r.content) < 4096 + 2000
        replies = r.json()
        assert len(replies) == 10 and sorted(m["id"] for m in replies) == list(range(10))
        assert any("exceed 4096 bytes" in m.get("error", {}).get("message", "") for m in replies)


# -- sizes of what a caller names -----------------------------------------------------------------

def test_ids_and_methods_are_bounded_and_responses_carry_one_outcome() -> None:
    with pytest.raises(InvalidMessage):
        classify_message({"jsonrpc": "2.0", "id": "x" * 257, "method": "ping"})
    with pytest.raises(InvalidMessage):
        classify_message({"jsonrpc": "2.0", "id": 1, "method": "m" * 129})
    with pytest.raises(InvalidMessage) as e:
        classify_message({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}})
    assert e.value.request_id is None
    assert classify_message({"jsonrpc": "2.0", "id": "x" * 256, "method": "ping"}) == "request"


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_long_tokens_names_uris_and_keys_are_refused_without_echo(era: str) -> None:
    async with McpTestClient(example_app(), era=era) as c:
        cases = [("tools/call", {"name": "test_simple_text", "_meta": {"progressToken": "p" * 900_000}}),
                 ("tools/call", {"name": "n" * 300}),
                 ("tools/call", {"name": "test_simple_text", "arguments": {"k" * 300: 1}}),
                 ("resources/read", {"uri": "test://" + "u" * 5000})]
        for method, params in cases:
            with pytest.raises(McpError) as e:
                await c.request(method, params)
            assert e.value.code == -32602 and e.value.data["reason"] == "too_long"
            assert len(str(e.value.message)) < 200
        r = await c.post({"jsonrpc": "2.0", "id": 9, "method": "x" * 5000}, c.headers())
        assert r.status_code == 400 and len(r.content) < 500


async def test_subscriptions_and_client_metadata_are_capped() -> None:
    app = example_app(max_subscriptions=2, max_client_metadata_bytes=4096)
    async with McpTestClient(app) as c:
        for uri in ("test://a", "test://b"):
            await c.request("resources/subscribe", {"uri": uri})
        await c.request("resources/subscribe", {"uri": "test://a"})  # already held: no new room needed
        with pytest.raises(McpError) as e:
            await c.request("resources/subscribe", {"uri": "test://c"})
        assert e.value.data["reason"] == "too_many_subscriptions"
        assert len((await app.sessions.get(c.session_id)).subscriptions) == 2
    with pytest.raises(McpError) as e:
        async with McpTestClient(app, capabilities={"experimental": {"blob": "x" * 900_000}}):
            pass
    assert e.value.data["reason"] == "too_large"
    async with McpTestClient(example_app(max_subscriptions=2), era="modern") as c:
        with pytest.raises(McpError) as e:
            await c.request("subscriptions/listen", {"notifications": {
                "resourceSubscriptions": ["test://a", "test://b", "test://c"]}})
        assert e.value.data["reason"] == "too_many_subscriptions"


# -- event-buffer bytes ---------------------------------------------------------------------------

async def test_event_buffer_keeps_a_byte_budget_per_session_and_in_total() -> None:
    buf = MemoryEventBuffer(max_events=1000, ttl_ms=60_000, max_bytes=10_000, max_total_bytes=25_000)
    chunk = b"x" * 1000
    for _ in range(50):
        await buf.append("a", "s1", chunk)
    assert buf.bytes_of("a") <= 10_000 and buf.total_bytes == buf.bytes_of("a")
    for sid in ("b", "c", "d"):
        for _ in range(20):
            await buf.append(sid, "s1", chunk)
    assert buf.total_bytes <= 25_000
    assert buf.bytes_of("a") < 10_000  # the session written to least recently gave way first
    assert buf.bytes_of("d") == 10_000
    held = buf.open("d")
    await buf.release("d")
    assert buf.total_bytes == sum(buf.bytes_of(s) for s in "abc")
    held.add("s1", chunk)  # a writer that kept the released buffer no longer counts
    assert buf.total_bytes == sum(buf.bytes_of(s) for s in "abc")


async def test_huge_progress_events_no_longer_pin_memory() -> None:
    app = example_app()
    async with McpTestClient(app) as c:
        for _ in range(5):
            with pytest.raises(McpError):
                await c.call_tool("test_tool_with_progress", progress_token="t" * 900_000)
        assert app.events.total_bytes < 10_000


# -- eviction -------------------------------------------------------------------------------------

async def test_another_identity_never_evicts_a_recent_session() -> None:
    app = example_app(auth_mode="jwt", auth_secret_key=SECRET, max_sessions=3)
    async with app.lifespan(), McpTestClient(app, headers=bearer("victim")) as victim, \
            McpTestClient(app, headers=bearer("mallory")) as m1, McpTestClient(app, headers=bearer("mallory")):
        with pytest.raises(McpError) as e:  # a third identity: every session is another's, and recent
            async with McpTestClient(app, headers=bearer("carol")):
                pass
        assert e.value.data["reason"] == "session_capacity"
        async with McpTestClient(app, headers=bearer("mallory")):  # its own oldest idle session makes room
            assert await app.sessions.get(m1.session_id) is None
            assert await victim.list_tools()
        for rec in app.sessions._items.values():  # once idle past the grace period, anyone's may go
            rec.last_seen -= 120
        async with McpTestClient(app, headers=bearer("carol")):
            pass


# -- templates ------------------------------------------------------------------------------------

@pytest.mark.parametrize("uri", ["test://template/%2e%2e%2f%2e%2e%2fetc%2fpasswd/data",
                                 "test://template/a%00b/data", "test://template/%2E%2E/data",
                                 "test://template/..%5Cx/data", "test://template/../data"])
async def test_decoded_template_variables_keep_the_literal_rules(uri: str) -> None:
    async with McpTestClient(example_app()) as c:
        with pytest.raises(McpError) as e:
            await c.read_resource(uri)
        assert "not found" in e.value.message.lower()
        ok = await c.read_resource("test://template/abc/data")
        assert "abc" in str(ok)


# -- streams --------------------------------------------------------------------------------------

async def test_streams_per_session_are_capped() -> None:
    app = example_app(max_streams_per_session=1)
    async with McpTestClient(app) as c:
        resp, _ = await c.open_stream()
        try:
            r = await c.http.get(c.url, headers={**c.headers(), "accept": "text/event-stream",
                                                 "last-event-id": "abc_1"})
            assert r.status_code == 409 and "1 open streams" in r.json()["error"]["message"]
        finally:
            await resp.aclose()
        await asyncio.sleep(0.05)
        r = await c.http.get(c.url, headers={**c.headers(), "accept": "text/event-stream", "last-event-id": "abc_1"})
        assert r.status_code == 200  # the slot came back when the stream closed


async def test_bounded_queue_drops_a_reader_that_fell_behind() -> None:
    q: BoundedQueue[int] = BoundedQueue(3)
    for i in range(3):
        q.put_nowait(i)
    assert [await q.get() for _ in range(3)] == [0, 1, 2]
    for i in range(4):
        q.put_nowait(i)
    assert q.overflowed and len(q) == 0 and await q.get() is None
    q.put_nowait(9)
    assert await q.get() is None


async def test_an_exchange_stops_queueing_for_a_client_that_never_reads() -> None:
    blocked = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message.get("more_body"):
            await blocked.wait()  # the client never reads: the first body write never completes

    ex = HttpExchange(send, 0, max_queued=50)
    for i in range(5000):
        ex.post({"jsonrpc": "2.0", "method": "notifications/message", "params": {"i": i, "pad": "x" * 100}})
        if i % 100 == 0:
            await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    assert ex.slow
    await asyncio.wait_for(ex.finish(b"{}"), 2)  # ends at once, the response left unfinished
    blocked.set()


@pytest.mark.parametrize("last", ["abc_\u00b2", "abc_abc", "abc_-1", "g_abc", "g_\u00b2", "_", "abc_" + "9" * 40])
async def test_malformed_last_event_ids_are_unknown_ids(last: str, caplog: pytest.LogCaptureFixture) -> None:
    async with McpTestClient(example_app()) as c:
        with caplog.at_level(logging.INFO):
            resp, _ = await c.open_stream({"last-event-id": last.encode("latin-1")})  # type: ignore[dict-item]
            assert resp.status_code == 200
            await resp.aclose()
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


# -- tenancy and principals -----------------------------------------------------------------------

async def test_resource_updates_stay_in_their_tenant() -> None:
    app = example_app(auth_mode="jwt", auth_secret_key=SECRET)
    async with app.lifespan(), McpTestClient(app, headers=bearer("a1", "acme")) as a, \
            McpTestClient(app, headers=bearer("b1", "globex")) as b, \
            McpTestClient(app, headers=bearer("a2", "acme")) as writer:
        await a.request("resources/subscribe", {"uri": "test://watched-resource"})
        await b.request("resources/subscribe", {"uri": "test://watched-resource"})
        a_resp, a_events = await a.open_stream()
        b_resp, b_events = await b.open_stream()
        try:
            await asyncio.wait_for(a_events.__anext__(), 5)  # priming events
            await asyncio.wait_for(b_events.__anext__(), 5)
            await writer.call_tool("update_watched_resource")
            ev = await asyncio.wait_for(a_events.__anext__(), 5)
            assert "notifications/resources/updated" in ev["data"]
            b_next = asyncio.ensure_future(b_events.__anext__())  # not wait_for: a cancel would close the stream
            await asyncio.sleep(0.5)
            assert not b_next.done()
            await app.notify.resource_updated("test://watched-resource")  # the server's own: everyone
            assert "resources/updated" in (await asyncio.wait_for(b_next, 5))["data"]
        finally:
            await a_resp.aclose()
            await b_resp.aclose()


@pytest.mark.parametrize("claims", [{"sub": ""}, {"sub": " "}, {"exp": "9999999999"}, {"exp": True}])
async def test_empty_subjects_and_string_expiries_are_invalid_tokens(claims: dict[str, Any]) -> None:
    app = example_app(auth_mode="jwt", auth_secret_key=SECRET)
    base = {"sub": "x", "cid": "app", "tid": "acme", "exp": int(time.time()) + 300}
    bad = jwt.encode({**base, **claims}, SECRET, algorithm="HS256")
    async with McpTestClient(app, initialize=False) as c:
        r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         {**c.headers(), "authorization": f"Bearer {bad}"})
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]


async def test_cors_is_off_by_default_and_grants_only_configured_origins() -> None:
    preflight = {"origin": "https://app.example", "access-control-request-method": "POST",
                 "access-control-request-headers": "content-type, mcp-session-id"}
    async with McpTestClient(example_app(), initialize=False) as c:
        r = await c.http.options(c.url, headers=preflight)
        assert r.status_code == 403 and "access-control-allow-origin" not in r.headers  # the origin guard
        r = await c.http.options(c.url)
        assert r.status_code == 204 and r.headers["allow"] and "access-control-allow-origin" not in r.headers
    app = example_app(cors_allowed_origins=("https://app.example",))
    async with McpTestClient(app, headers={"origin": "https://app.example"}) as c:
        r = await c.http.options(c.url, headers=preflight)
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        assert r.headers["access-control-allow-headers"] == "content-type, mcp-session-id"
        r = await c.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, c.headers())
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        assert "mcp-session-id" in r.headers["access-control-expose-headers"]
        r = await c.http.options(c.url, headers={**preflight, "origin": "https://evil.example"})
        assert r.status_code == 403 and "access-control-allow-origin" not in r.headers
    async with McpTestClient(example_app(cors_allowed_origins=("*",)), headers={"origin": "https://any.example"}) as c:
        r = await c.http.options(c.url, headers={**preflight, "origin": "https://any.example"})
        assert r.headers["access-control-allow-origin"] == "https://any.example"
        r = await c.post({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}, c.headers())
        assert r.headers["access-control-allow-origin"] == "https://any.example"  # the answer too, not only the grant


async def test_stream_slots_are_shared_by_instances_on_redis(redis_url: str) -> None:
    import uuid

    import redis.asyncio as redis_asyncio

    from mcpcore.sessions.streams import RedisStreamSlots

    ns = f"t-{uuid.uuid4().hex[:8]}"
    a_client, b_client = redis_asyncio.from_url(redis_url), redis_asyncio.from_url(redis_url)
    try:
        a = RedisStreamSlots(a_client, 2, namespace=ns, lease_ms=300)
        b = RedisStreamSlots(b_client, 2, namespace=ns, lease_ms=300)
        first = await a.acquire("s1")
        assert first is not None and await b.acquire("s1") is not None
        assert await b.acquire("s1") is None  # two open on two instances: the third is refused
        assert await a.acquire("s2") is not None  # another session has its own slots
        await a.release("s1", first)
        assert await b.acquire("s1") is not None
        for _ in range(3):  # a renewed lease outlives its first term; a lapsed one frees the slot
            await asyncio.sleep(0.15)
            await b.renew()
        assert await a.acquire("s1") is None
        await asyncio.sleep(0.4)  # b stops renewing (as a dead instance would)
        assert await a.acquire("s1") is not None
    finally:
        await a_client.aclose()
        await b_client.aclose()


# -- what an answer may quote of a caller's strings -------------------------------------------------

def _skills_app(tmp_path: Any) -> Any:
    from mcpcore import McpApp, Settings

    folder = tmp_path / "pdf"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: pdf\ndescription: Reads PDF files.\n---\n# pdf\n")
    return McpApp("skills", "1.0", skills=tmp_path, settings=Settings.from_env({}))


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_skills_answers_quote_at_most_the_documented_lengths(era: str, tmp_path: Any) -> None:
    async with McpTestClient(_skills_app(tmp_path), era=era) as c:
        for method in ("skills/get", "resources/directory/read"):
            r = await c.post({"jsonrpc": "2.0", "id": 1, "method": method,
                              "params": c.envelope({"uri": "skill://" + "a" * 400_000})}, c.headers(method))
            assert len(r.content) < 1000 and r.json()["error"]["data"]["reason"] == "too_long"
            near = "skill://" + "b" * 4000  # under the 4,096 bound: data.uri names it, the message quotes 100
            with pytest.raises(McpError) as e:
                await c.request(method, {"uri": near})
            assert e.value.data["uri"] == near and "b" * 101 not in e.value.message and "b" * 80 in e.value.message
            with pytest.raises(McpError) as e:
                await c.request(method, {"uri": {"nested": ["c" * 50_000]}})
            assert len(e.value.message) < 200 and "uri" not in (e.value.data or {})


async def test_header_mismatches_and_unknown_names_quote_at_most_100_characters() -> None:
    many = {f"{i}{'k' * 250}": "1" for i in range(500)}
    async with McpTestClient(example_app(), era="modern") as c:
        params = c.envelope({"name": "n" * 250, "arguments": {}})
        h = c.headers("tools/call", params)
        h["mcp-name"] = "h" * 50_000
        r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, h)
        message = r.json()["error"]["message"]
        assert r.status_code == 400 and "Mcp-Name" in message and len(r.content) < 1000
        assert "h" * 100 in message and "h" * 101 not in message and "n" * 101 not in message
        h = c.headers("tools/call", params)
        h["mcp-protocol-version"] = "2026-07-28" + "v" * 50_000
        r = await c.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}, h)
        assert r.status_code == 400 and len(r.content) < 1000
        for method, p in (("tools/call", {"name": "t" * 250}), ("prompts/get", {"name": "p" * 250}),
                          ("completion/complete", {"ref": {"type": "ref/prompt", "name": "q" * 400_000},
                                                   "argument": {"name": "a", "value": ""}}),
                          ("completion/complete", {"ref": {"type": "ref/resource", "uri": {"x": "u" * 400_000}},
                                                   "argument": {"name": "a", "value": ""}}),
                          ("prompts/get", {"name": "test_simple_prompt", "arguments": many})):
            with pytest.raises(McpError) as e:
                await c.request(method, p)
            assert len(e.value.message) <= 200, (method, len(e.value.message))
            assert len(str(e.value.data)) <= 4000, (method, len(str(e.value.data)))
        r = await c.call_tool("search", many)
        err = tool_error(r)
        assert err is not None and len(err["message"]) <= 200 and len(str(err["data"])) <= 4000
        assert err["message"].endswith(" and 480 more.")


def test_quoted_cuts_a_callers_string_to_100_characters() -> None:
    from mcpcore.errors import quoted

    assert quoted("short") == "short" and quoted("x" * 100) == "x" * 100
    assert quoted("x" * 5000) == "x" * 100 + "…" and quoted("x" * 50, 10) == "x" * 10 + "…"
    assert quoted({"k": "v" * 5000}).startswith("{'k': 'vvv") and len(quoted({"k": "v" * 5000})) == 101
