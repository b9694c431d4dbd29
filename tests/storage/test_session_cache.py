"""The Redis session store's per-instance cache: two apps in one process share one Redis, as two
instances behind a load balancer would. A change made on one (log level, subscription, identity
binding, DELETE, a capacity eviction) is seen by the other's next request; expiry slides while
one instance serves a session from its cache; a bus reconnect drops the cache; Redis down is 503."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpcore import McpApp, McpError
from mcpcore.testing import McpTestClient
from tests.auth.test_http_auth import bearer, jwt_app, token
from tests.conftest import example_app
from tests.storage.conftest import redis_again, redis_server

pytestmark = pytest.mark.anyio

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@contextlib.asynccontextmanager
async def instances(*apps: McpApp) -> AsyncIterator[None]:
    for app in apps:
        await app.startup()
    try:
        yield
    finally:
        for app in apps:
            await app.shutdown()


def on(app: McpApp, client: McpTestClient, **kw: Any) -> McpTestClient:
    """A client for ``app`` that continues ``client``'s session (the load balancer's next hop)."""
    other = McpTestClient(app, initialize=False, **kw)
    other.session_id = client.session_id
    other.init_result = client.init_result
    return other


def announced(app: McpApp, session_id: str) -> Callable[[], Any]:
    """Await the returned function to wait until ``app``'s bus has delivered an announcement
    about ``session_id`` (in process, nothing else gives its listener a turn: a real client's
    next request travels over the network meanwhile)."""
    seen = asyncio.Event()

    def on_event(event: dict[str, Any]) -> None:
        if event.get("kind") == "session" and event.get("id") == session_id:
            seen.set()

    app.bus.subscribe(on_event)
    return lambda: asyncio.wait_for(seen.wait(), 5)


def redis_pair(redis_url: str, **settings: Any) -> tuple[McpApp, McpApp]:
    return (example_app(session_store="redis", redis_url=redis_url, **settings),
            example_app(session_store="redis", redis_url=redis_url, **settings))


def logs(c: McpTestClient) -> int:
    n = len([m for m in c.messages if m.get("method") == "notifications/message"])
    c.messages.clear()
    return n


async def test_requests_are_served_from_the_cache(redis_url: str) -> None:
    a, _ = redis_pair(redis_url)
    async with instances(a), McpTestClient(a) as c:
        calls = 0
        script = a.sessions._refresh

        async def counted(*args: Any, **kw: Any) -> Any:
            nonlocal calls
            calls += 1
            return await script(*args, **kw)

        a.sessions._refresh = counted
        for _ in range(30):
            assert await c.list_tools()
        assert calls <= 5  # created here, so cached (a bus event being read at that moment forces a read)
        assert len(a.sessions) >= 1


def count_refreshes(app: McpApp) -> Callable[[], int]:
    """Count the refresh scripts ``app``'s session store sends from now on."""
    script = app.sessions._refresh
    calls = 0

    async def counted(*args: Any, **kw: Any) -> Any:
        nonlocal calls
        calls += 1
        return await script(*args, **kw)

    app.sessions._refresh = counted
    return lambda: calls


async def test_concurrent_requests_share_one_refresh(redis_url: str) -> None:
    """Past refresh_ms, the 64 requests in flight for a session send one script between them
    (not one each, each on a connection of its own), and all of them get the record."""
    a, _ = redis_pair(redis_url, session_idle_ms=1000)  # refreshed every 100 ms of use
    async with instances(a), McpTestClient(a) as c:
        sid = c.session_id or ""
        calls = count_refreshes(a)
        for rounds in range(1, 4):
            await asyncio.sleep(0.15)  # the cached copy is due for a refresh
            records = await asyncio.gather(*(a.sessions.get(sid) for _ in range(64)))
            assert all(r is not None and r.id == sid for r in records)
            assert calls() == rounds
        assert not a.sessions._flights


async def test_a_request_after_an_announcement_does_not_join_an_older_read(redis_url: str) -> None:
    a, b = redis_pair(redis_url)
    async with instances(a, b), McpTestClient(a) as ca, on(b, ca) as cb:
        sid = ca.session_id or ""
        a.sessions.clear_cache()
        calls = count_refreshes(a)
        first = asyncio.ensure_future(a.sessions.get(sid))  # a read in flight ...
        await asyncio.sleep(0)
        assert sid in a.sessions._flights
        arrived = announced(a, sid)
        assert (await cb.post({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                               "params": {"level": "debug"}}, cb.headers())).status_code == 200
        await arrived()  # ... then the change is announced here
        assert sid not in a.sessions._flights
        second = await a.sessions.get(sid)
        assert second is not None and second.log_level == "debug" and calls() == 2
        assert (await first) is not None


async def test_a_shared_read_survives_the_request_that_started_it(redis_url: str) -> None:
    a, _ = redis_pair(redis_url)
    async with instances(a), McpTestClient(a) as c:
        sid = c.session_id or ""
        a.sessions.clear_cache()
        leader = asyncio.ensure_future(a.sessions.get(sid))
        await asyncio.sleep(0)
        follower = asyncio.ensure_future(a.sessions.get(sid))
        await asyncio.sleep(0)
        leader.cancel()  # its client went away
        record = await follower
        assert record is not None and record.id == sid
        with contextlib.suppress(asyncio.CancelledError):
            await leader


async def test_log_level_set_on_one_instance_is_used_by_the_next_request_on_another(redis_url: str) -> None:
    a, b = redis_pair(redis_url)
    async with instances(a, b), McpTestClient(a) as ca, on(b, ca) as cb:
        await cb.call_tool("test_tool_with_logging")
        before = logs(cb)
        assert ca.session_id in b.sessions._cache  # b now holds a copy
        wait = announced(b, ca.session_id or "")
        await ca.request("logging/setLevel", {"level": "error"})
        await wait()
        await cb.call_tool("test_tool_with_logging")
        assert before == 3 and logs(cb) == 0  # info lines are below "error" now
        wait = announced(b, ca.session_id or "")
        await ca.request("logging/setLevel", {"level": "debug"})
        await wait()
        await cb.call_tool("test_tool_with_logging")
        assert logs(cb) == 3


async def test_subscription_made_on_one_instance_is_seen_on_another(redis_url: str) -> None:
    a, b = redis_pair(redis_url)
    uri = "test://watched-resource"
    async with instances(a, b), McpTestClient(a) as ca, on(b, ca) as cb:
        await cb.call_tool("update_watched_resource")
        assert not [m for m in cb.messages if m.get("method") == "notifications/resources/updated"]
        wait = announced(b, ca.session_id or "")
        await ca.request("resources/subscribe", {"uri": uri})
        await wait()
        await cb.call_tool("update_watched_resource")  # b decides from its view of the session
        assert [m["params"] for m in cb.messages if m.get("method") == "notifications/resources/updated"] \
            == [{"uri": uri}]


async def test_identity_bound_on_one_instance_is_enforced_on_another(redis_url: str) -> None:
    """A session opened without a token is bound to the first identity that uses it; another
    instance that cached it unbound must not let a second identity take it."""
    alice, mallory = f"alice-{secrets.token_hex(4)}", f"mallory-{secrets.token_hex(4)}"
    anon = example_app(session_store="redis", redis_url=redis_url)
    a = jwt_app(session_store="redis", redis_url=redis_url)
    b = jwt_app(session_store="redis", redis_url=redis_url)
    async with instances(anon, a, b), McpTestClient(anon) as c0:
        sid = c0.session_id or ""
        cached = await b.sessions.get(sid)  # b served it before (as it was then: unbound)
        assert cached is not None and cached.identity is None and sid in b.sessions._cache
        wait = announced(b, sid)
        async with on(a, c0, headers=bearer(token(sub=alice))) as ca:
            assert await ca.list_tools()  # binds the session to alice, on a
        await wait()
        async with on(b, c0, headers=bearer(token(sub=mallory))) as cm:
            assert (await cm.post(LIST)).status_code == 404
        async with on(b, c0, headers=bearer(token(sub=alice))) as cb:
            assert await cb.list_tools()
        stored = await b.sessions.get(sid)
        assert stored is not None and stored.identity is not None and stored.identity[2] == alice


async def test_delete_on_one_instance_is_404_on_another(redis_url: str) -> None:
    a, b = redis_pair(redis_url)
    async with instances(a, b), McpTestClient(a) as ca, on(b, ca) as cb:
        assert await cb.list_tools()
        assert ca.session_id in b.sessions._cache
        wait = announced(b, ca.session_id or "")
        assert (await ca.delete_session()).status_code == 200
        await wait()
        assert ca.session_id not in b.sessions._cache
        assert (await cb.post(LIST, cb.headers())).status_code == 404
        assert (await ca.post(LIST, ca.headers())).status_code == 404


async def test_delete_on_one_instance_ends_the_get_stream_held_on_another(redis_url: str) -> None:
    a, b = redis_pair(redis_url)
    async with instances(a, b), McpTestClient(a) as ca, on(b, ca) as cb:
        resp, events = await cb.open_stream()
        assert resp.status_code == 200
        assert (await asyncio.wait_for(anext(events), 5))["data"] == ""  # the priming event
        reader = asyncio.ensure_future(anext(events, None))
        await asyncio.sleep(0.05)
        assert not reader.done()
        assert (await ca.delete_session()).status_code == 200
        assert await asyncio.wait_for(reader, 5) is None  # the stream ended, nothing more sent
        await resp.aclose()
        assert ca.session_id not in b.live._items


async def test_an_open_stream_keeps_its_session_alive_and_ends_once_the_record_is_gone(redis_url: str) -> None:
    """Redis expires records on its own, so the instance holding a session's GET stream slides
    its expiry (as memory mode never evicts a busy session); a record that vanishes without an
    announcement (expired, evicted by Redis, deleted by hand) ends the stream at the next sweep."""
    a, b = redis_pair(redis_url, session_idle_ms=2000)
    async with instances(a, b), McpTestClient(a) as ca, on(b, ca) as cb:
        resp, events = await cb.open_stream()
        assert (await asyncio.wait_for(anext(events), 5))["data"] == ""  # the priming event
        reader = asyncio.ensure_future(anext(events, None))
        await asyncio.sleep(3.5)  # past the idle time, with no request from the client
        assert not reader.done()
        assert (await ca.post(LIST, ca.headers())).status_code == 200
        await a.sessions.r.delete(a.sessions._key(ca.session_id or ""))
        assert await asyncio.wait_for(reader, 5) is None
        await resp.aclose()


async def test_save_and_delete_announce_before_returning(redis_url: str) -> None:
    """The announcement travels in the write's own round trip: it is already published (so on
    its way to every instance) when save/delete return."""
    import redis.asyncio as aioredis

    a, _ = redis_pair(redis_url)
    async with instances(a), McpTestClient(a) as ca:
        listener = aioredis.from_url(redis_url)
        pubsub = listener.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(a.bus.channel)
            sid = ca.session_id or ""
            record = await a.sessions.get(sid)
            assert record is not None
            record.log_level = "debug"
            await a.sessions.save(record)
            assert await a.sessions.delete(sid)
            got = []
            deadline = time.monotonic() + 5
            while len(got) < 2 and time.monotonic() < deadline:
                msg = await pubsub.get_message(timeout=1.0)
                if msg is not None:
                    event = orjson.loads(msg["data"])
                    if event.get("kind") == "session" and event.get("id") == sid:
                        got.append(event)
            assert got == [{"kind": "session", "id": sid}, {"kind": "session", "id": sid, "gone": True}]
        finally:
            await pubsub.aclose()
            await listener.aclose()


async def test_capacity_eviction_on_one_instance_invalidates_another(redis_url: str) -> None:
    """One session per identity: the second evicts the first (idle long enough) on a, inside the
    create script, which announces it; b, holding the first in its cache, answers 404 for it."""
    carol = f"carol-{secrets.token_hex(4)}"
    a = jwt_app(session_store="redis", redis_url=redis_url, max_sessions_per_identity=1)
    b = jwt_app(session_store="redis", redis_url=redis_url, max_sessions_per_identity=1)
    a.sessions.evict_after_ms = 0
    released: list[str | None] = []
    auth = bearer(token(sub=carol))
    async with instances(a, b), McpTestClient(a, headers=auth) as first, on(b, first, headers=auth) as on_b:
        assert await on_b.list_tools()
        assert first.session_id in b.sessions._cache
        wait = announced(b, first.session_id or "")
        evicted = b.sessions.on_evict
        assert evicted is not None
        b.sessions.on_evict = lambda sid: (released.append(sid), evicted(sid))[1]
        async with McpTestClient(a, headers=auth) as second:
            assert second.session_id != first.session_id
            await wait()
            assert (await on_b.post(LIST, on_b.headers())).status_code == 404
            assert await second.list_tools()
        assert released == [first.session_id]


async def test_expiry_slides_while_one_instance_serves_from_its_cache(redis_url: str) -> None:
    a, b = redis_pair(redis_url, session_idle_ms=1000)  # refreshed in Redis every 100 ms of use
    assert a.sessions.refresh_s == pytest.approx(0.1)
    async with instances(a, b), McpTestClient(a) as ca:
        sid = ca.session_id or ""
        deadline = time.monotonic() + 2.5  # 2.5 idle timeouts, only ever on a
        while time.monotonic() < deadline:
            assert (await ca.post(LIST, ca.headers())).status_code == 200
            await asyncio.sleep(0.03)
        assert await a.redis.pttl(a.sessions._key(sid)) > 0
        async with on(b, ca) as cb:
            assert (await cb.post(LIST, cb.headers())).status_code == 200  # alive for b too
        await asyncio.sleep(1.3)  # unused for longer than the idle timeout: gone everywhere
        assert (await ca.post(LIST, ca.headers())).status_code == 404
        async with on(b, ca) as cb:
            assert (await cb.post(LIST, cb.headers())).status_code == 404
        assert sid not in a.sessions._cache


async def _bus_connection_addr(app: McpApp) -> str:
    sock = app.bus._conn._writer.get_extra_info("sockname")
    return f"{sock[0]}:{sock[1]}"


async def test_cache_is_cleared_when_the_bus_reconnects(redis_url: str) -> None:
    """Announcements published while the bus is away are lost: on reconnect the cache goes."""
    a, _ = redis_pair(redis_url)
    async with instances(a), McpTestClient(a) as ca:
        sid = ca.session_id or ""
        assert (await a.sessions.get(sid)) is not None and sid in a.sessions._cache
        raw = orjson.loads(await a.redis.get(a.sessions._key(sid)))
        raw["log"] = "debug"  # changed behind the bus's back: nobody announces it
        await a.redis.set(a.sessions._key(sid), orjson.dumps(raw), keepttl=True)
        cached = await a.sessions.get(sid)
        assert cached is not None and cached.log_level is None  # still the cached copy
        resets = 0

        def count() -> None:
            nonlocal resets
            resets += 1

        a.bus.on_reset(count)
        assert await a.redis.client_kill_filter(addr=await _bus_connection_addr(a)) == 1
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (resets and a.bus.caught_up):
            await asyncio.sleep(0.02)
        assert resets and a.bus.caught_up and a.bus._conn is not None
        assert sid not in a.sessions._cache
        fresh = await a.sessions.get(sid)
        assert fresh is not None and fresh.log_level == "debug"


async def test_redis_down_is_503_even_for_a_cached_session(tmp_path: Path) -> None:
    """With Redis gone the bus is down, so the cache is not used: 503 as without one; after a
    restart (Redis kept nothing) the session is 404, not served from the old cache."""
    with redis_server(tmp_path / "redis.log") as (url, proc):
        a = example_app(session_store="redis", redis_url=url)
        async with instances(a), McpTestClient(a) as ca:
            assert await ca.list_tools() and ca.session_id in a.sessions._cache
            port = url.rsplit(":", 1)[1].split("/")[0]
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
            await asyncio.sleep(0.05)  # a real request comes over the network: the loop has seen the close
            r = await ca.post(LIST, ca.headers())
            assert r.status_code == 503 and r.json()["error"]["code"] == -32000
            with pytest.raises(McpError):
                await a.sessions.get(ca.session_id or "")
            async with redis_again(port):
                assert (await ca.post(LIST, ca.headers())).status_code == 404
                for _ in range(200):
                    if a.bus.caught_up:
                        break
                    await asyncio.sleep(0.05)
                assert a.bus.caught_up and len(a.sessions) == 0
                async with McpTestClient(a) as fresh:
                    assert await fresh.list_tools()
