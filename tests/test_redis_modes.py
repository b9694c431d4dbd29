"""MCP_REDIS_MODE: the settings and their errors, and the Redis parts on a real 3-master Cluster
(admission and eviction scripts in one slot, streams in others, sharded bus, ctx.state per
tenant, a node down answered 503 and recovered without a restart)."""

from __future__ import annotations

import asyncio
import gc
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from mcpcore import ConfigurationError, McpError, Settings
from mcpcore.bus.redis import RedisBus
from mcpcore.redis_client import create_redis_client, describe_redis, is_cluster
from mcpcore.sessions.base import SessionRecord, new_session_id
from mcpcore.sessions.memory import SessionCapacityError
from mcpcore.sessions.redis import RedisSessionStore
from mcpcore.sessions.redis_events import RedisEventBuffer, events_key
from mcpcore.storage.factory import create_provider
from tests.redis_topologies import Topology, redis_cluster

pytestmark = pytest.mark.anyio


# -- settings -------------------------------------------------------------------------------------


def test_mode_and_sentinel_variables_parse_and_name_themselves() -> None:
    s = Settings.from_env({"MCP_REDIS_MODE": "Sentinel", "MCP_REDIS_SENTINELS": "10.0.0.1:26379, [::1]:26380",
                           "MCP_REDIS_SENTINEL_MASTER": "main", "MCP_REDIS_SENTINEL_PASSWORD": "pw"})
    assert s.redis_mode == "sentinel"
    assert s.redis_sentinels == ("10.0.0.1:26379", "::1:26380")
    assert "pw" not in repr(s)
    assert describe_redis(s) == "sentinel master 'main' via 10.0.0.1:26379,::1:26380"
    with pytest.raises(ConfigurationError, match="MCP_REDIS_MODE must be one of standalone, cluster, sentinel"):
        Settings.from_env({"MCP_REDIS_MODE": "sharded"})
    with pytest.raises(ConfigurationError, match="MCP_REDIS_SENTINELS must be comma-separated host:port pairs, "
                                                 "got 'sentinel-1'"):
        Settings.from_env({"MCP_REDIS_SENTINELS": "sentinel-1"})
    with pytest.raises(ConfigurationError, match="MCP_REDIS_SENTINELS must be"):
        Settings.from_env({"MCP_REDIS_SENTINELS": "a:70000"})


@pytest.mark.parametrize(("env", "message"), [
    ({}, "MCP_SESSION_STORE=redis needs REDIS_URL"),
    ({"MCP_REDIS_MODE": "sentinel"}, "needs MCP_REDIS_SENTINELS"),
    ({"MCP_REDIS_MODE": "sentinel", "MCP_REDIS_SENTINELS": "h:1"}, "needs MCP_REDIS_SENTINEL_MASTER"),
    ({"MCP_REDIS_MODE": "cluster", "REDIS_URL": "unix:///tmp/r.sock"},
     "REDIS_URL must start with redis://, rediss:// with MCP_REDIS_MODE=cluster"),
    ({"REDIS_URL": "http://x"}, "REDIS_URL must start with redis://"),
])
def test_a_mode_without_what_it_needs_is_refused_at_startup(env: dict[str, str], message: str) -> None:
    from mcpcore import McpApp

    with pytest.raises(ConfigurationError, match=message):
        McpApp("x", "1", settings=Settings.from_env({"MCP_SESSION_STORE": "redis", **env}))
    with pytest.raises(ConfigurationError, match=message.replace("MCP_SESSION_STORE", "STORAGE_PROVIDER_TYPE")):
        create_provider(Settings.from_env({"STORAGE_PROVIDER_TYPE": "redis", **env}))


# -- a real Cluster -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    with redis_cluster(tmp_path_factory.mktemp("cluster")) as t:
        yield t


@pytest.fixture
async def client(topo: Topology) -> AsyncIterator[Any]:
    r = create_redis_client(Settings.from_env(topo.env))
    assert is_cluster(r)
    yield r
    await r.aclose()
    # redis-py's cluster client may drop, unclosed, the node objects it made to re-read the slot
    # map while a node was down; collect them here rather than have a later test warn about them.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def _node_of(r: Any, key: str) -> int:
    return int(r.get_node_from_key(key).port)


async def test_admission_eviction_and_announcements_on_a_cluster(client: Any) -> None:
    ns = f"c{uuid.uuid4().hex[:8]}"
    bus = RedisBus(client, namespace=ns)
    heard: list[dict[str, Any]] = []
    bus.subscribe(heard.append)
    await bus.start()
    store = RedisSessionStore(client, namespace=ns, max_sessions=2, max_per_identity=1, evict_after_ms=0)
    store.attach(bus)
    events = RedisEventBuffer(client, namespace=ns)
    gone: list[str] = []
    store.on_evict = gone.append
    try:
        ids = [new_session_id() for _ in range(3)]
        # the streams spread over the primaries, the bookkeeping stays in the namespace's slot
        assert len({_node_of(client, events_key(ns, sid)) for sid in ids + [new_session_id() for _ in range(9)]}) > 1
        for sid in ids[:2]:
            await store.create(SessionRecord(id=sid))
            await events.append(sid, "s1", b"hello")
            await asyncio.sleep(0.01)
        await store.create(SessionRecord(id=ids[2]))  # full: the least recently used one makes room
        assert set(gone) == {ids[0]}  # here at once, and again when the announcement arrives
        assert await store.get(ids[0]) is None and await store.get(ids[2]) is not None
        assert not await client.exists(events_key(ns, ids[0]))  # its stream too, though in another slot
        assert await client.exists(events_key(ns, ids[1]))
        for _ in range(100):
            if any(e.get("id") == ids[0] and e.get("gone") for e in heard):
                break
            await asyncio.sleep(0.02)
        assert any(e.get("id") == ids[0] and e.get("gone") for e in heard)  # SPUBLISH from the script

        who = ("acme", "desk", "alice")
        store.max_sessions, store.evict_after_ms = 10, 60_000  # the identity's one session is recent:
        await store.create(SessionRecord(id=new_session_id(), identity=who))  # no room for a second
        with pytest.raises(SessionCapacityError):
            await store.create(SessionRecord(id=new_session_id(), identity=who))

        record = await store.get(ids[2])
        assert record is not None
        record.log_level = "debug"
        await store.save(record)
        assert (await store.get(ids[2])).log_level == "debug"  # type: ignore[union-attr]
        assert await store.delete(ids[2])
        assert await store.get(ids[2]) is None
        assert await store.count() == 2  # ids[1] and the identity's
    finally:
        await bus.close()


async def test_ctx_state_provider_on_a_cluster(topo: Topology) -> None:
    provider = create_provider(Settings.from_env({**topo.env, "STORAGE_PROVIDER_TYPE": "redis"}))
    try:
        assert "cluster via 127.0.0.1" in repr(provider)
        tenants = [f"t{uuid.uuid4().hex[:6]}" for _ in range(6)]
        for t in tenants:
            await provider.set(t, "a/1", b"one")
            await provider.set_many(t, {"a/2": b"two", "b/1": b"three"})
        for t in tenants:
            assert await provider.get_many(t, ["a/1", "a/2", "zz"]) == {"a/1": b"one", "a/2": b"two"}
            page, more = await provider.list(t, "a/", None, 10)
            assert page == [("a/1", b"one"), ("a/2", b"two")] and not more
            assert await provider.take(t, "b/1") == b"three" and await provider.take(t, "b/1") is None
            assert await provider.clear(t) == 2
    finally:
        await provider.close()


async def test_a_node_down_is_503_and_recovers_without_a_restart(topo: Topology, client: Any) -> None:
    ns = f"d{uuid.uuid4().hex[:8]}"
    store = RedisSessionStore(client, namespace=ns)
    sid = new_session_id()
    await store.create(SessionRecord(id=sid))
    port = _node_of(client, f"{{{ns}}}:sessions")
    topo.stop(port)
    try:
        with pytest.raises(McpError) as e:
            await store.create(SessionRecord(id=new_session_id()))
        assert e.value.code == -32000 and e.value.data == {"reason": "store_unavailable"}
    finally:
        topo.start(port)
    for _ in range(100):  # the node rejoins with its slots (nodes.conf); the same client carries on
        try:
            await store.create(SessionRecord(id=new_session_id()))
            break
        except McpError:
            await asyncio.sleep(0.1)
    else:
        raise AssertionError("the store did not recover")

