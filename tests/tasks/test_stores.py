"""One behaviour for every task store (memory, Redis): each atomic step guarded by what the
caller saw, owners capped, expiry by the TTL, and, in Redis, leases that lapse and are taken over."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpcore.tasks.base import TaskBounds, TaskStore
from mcpcore.tasks.memory import MemoryTaskStore
from mcpcore.tasks.record import TaskMeta, TaskState, new_task_id, now_ms

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[TaskStore]:
    if request.param == "memory":
        yield MemoryTaskStore()
        return
    import redis.asyncio as redis_asyncio

    from mcpcore.tasks.redis import RedisTaskStore

    client = redis_asyncio.from_url(request.getfixturevalue("redis_url"))
    try:
        yield RedisTaskStore(client, namespace=f"test-{uuid.uuid4().hex[:8]}")
    finally:
        await client.aclose()


def state(owner: str = "alice", ttl_ms: int = 60_000, created: int | None = None, holder: str = "me") -> TaskState:
    meta = TaskMeta(task_id=new_task_id(), owner=owner, tool="t", arguments={"x": 1}, era="modern",
                    protocol_version="2026-07-28", created=created or now_ms(), ttl_ms=ttl_ms, poll_ms=500)
    return TaskState(meta=meta, holder=holder, updated=meta.created)


async def made(store: TaskStore, **kw: Any) -> TaskState:
    st = state(**kw)
    assert await store.create(st, lease_ms=5000) == "created"
    return st


async def test_create_then_get_round_trips(store: TaskStore) -> None:
    st = await made(store)
    got = await store.get(st.task_id)
    assert got is not None and got.meta == st.meta and got.status == "working" and got.attempt == 1
    assert got.holder == "me" and got.deadline is not None and got.deadline > now_ms()
    assert await store.get("no-such-task") is None


async def test_finish_once_by_the_holding_attempt(store: TaskStore) -> None:
    st = await made(store)
    assert not await store.finish(st.task_id, 2, "completed", b'{"content":[]}', None)  # not its attempt
    assert await store.finish(st.task_id, 1, "completed", b'{"content":[],"structuredContent":{}}', None)
    assert not await store.finish(st.task_id, 1, "failed", b'{"code":-32603,"message":"x"}', "x")  # terminal
    got = await store.get(st.task_id)
    assert got is not None and got.status == "completed"
    assert got.outcome == b'{"content":[],"structuredContent":{}}'  # stored as written, never re-encoded


async def test_questions_answers_and_resume(store: TaskStore) -> None:
    st = await made(store)
    asks = {"a#1": b'{"method":"elicitation/create","params":{}}', "b#1": b'{"method":"roots/list","params":{}}'}
    assert await store.park(st.task_id, 1, asks, "state-1", "Waiting")
    got = await store.get(st.task_id)
    assert got is not None and got.status == "input_required" and got.asks == asks and got.round == 1
    assert got.state == "state-1" and got.holder is None
    assert await store.answer(st.task_id, {"a#1": b'{"action":"accept","content":{}}', "zzz": b"{}"}, "you", 5000) \
        is None
    got = await store.get(st.task_id)
    assert got is not None and got.status == "input_required" and list(got.asks) == ["b#1"]
    attempt = await store.answer(st.task_id, {"b#1": b'{"roots":[]}', "a#1": b'{"late":true}'}, "you", 5000)
    assert attempt == 2
    got = await store.get(st.task_id)
    assert got is not None and got.status == "working" and got.holder == "you" and got.asks == {}
    assert got.answers == {"a#1": b'{"action":"accept","content":{}}', "b#1": b'{"roots":[]}'}
    assert got.handler_inputs() == {"a": {"action": "accept", "content": {}}, "b": {"roots": []}}
    assert await store.answer(st.task_id, {"b#1": b"{}"}, "third", 5000) is None  # answered already
    assert not await store.finish(st.task_id, 1, "completed", b"{}", None)  # the old attempt is refused
    assert await store.finish(st.task_id, 2, "completed", b"{}", None)


async def test_cancel_ends_an_active_task_only(store: TaskStore) -> None:
    st = await made(store)
    assert await store.cancel(st.task_id, "stop") == "working"
    assert await store.cancel(st.task_id, "again") == "cancelled"
    got = await store.get(st.task_id)
    assert got is not None and got.status == "cancelled" and got.message == "stop"
    assert not await store.finish(st.task_id, 1, "completed", b"{}", None)
    assert await store.cancel("no-such-task", "x") is None


async def test_an_owner_is_capped_on_unfinished_tasks(store: TaskStore) -> None:
    store.bounds = TaskBounds(active=2)
    tasks = [state(owner="bob") for _ in range(3)]
    assert await store.create(tasks[0], lease_ms=5000) == "created"
    assert await store.create(tasks[1], lease_ms=5000) == "created"
    assert await store.create(tasks[2], lease_ms=5000) == "too_many"
    assert await store.get(tasks[2].task_id) is None
    assert await store.create(state(owner="carol"), lease_ms=5000) == "created"  # another owner has room
    assert await store.finish(tasks[0].task_id, 1, "completed", b"{}", None)
    assert await store.create(tasks[2], lease_ms=5000) == "created"  # a finished one makes room


async def test_page_lists_the_owners_tasks_only(store: TaskStore) -> None:
    mine = [await made(store, owner="dave") for _ in range(3)]
    await made(store, owner="erin")
    first, nxt = await store.page("dave", 0, 2)
    assert nxt == 2 and len(first) == 2
    rest, end = await store.page("dave", 2, 2)
    assert end is None
    assert {s.task_id for s in first + rest} == {s.task_id for s in mine}


async def test_a_task_is_gone_after_its_ttl(store: TaskStore) -> None:
    st = await made(store, ttl_ms=1000, created=now_ms() - 500)
    assert await store.get(st.task_id) is not None  # half a second to spare, even on a loaded machine
    await asyncio.sleep(0.6)
    await store.sweep()
    assert await store.get(st.task_id) is None
    assert (await store.page("alice", 0, 10))[0] == []


async def test_renew_reports_what_is_no_longer_held(store: TaskStore) -> None:
    kept, cancelled = await made(store), await made(store)
    await store.cancel(cancelled.task_id, "stop")
    lost = await store.renew({kept.task_id: 1, cancelled.task_id: 1, "gone": 1}, "me", 5000)
    assert lost == {cancelled.task_id, "gone"}
    assert await store.renew({kept.task_id: 1}, "someone-else", 5000) == {kept.task_id}


async def test_a_lapsed_lease_is_taken_over_once(redis_url: str) -> None:
    import redis.asyncio as redis_asyncio

    from mcpcore.tasks.redis import RedisTaskStore

    client = redis_asyncio.from_url(redis_url)
    try:
        store = RedisTaskStore(client, namespace=f"test-{uuid.uuid4().hex[:8]}")
        lapsing, parked, done = state(holder="dead"), state(holder="dead"), state(holder="dead")
        for st in (lapsing, parked, done):
            assert await store.create(st, lease_ms=100) == "created"
        assert await store.park(parked.task_id, 1, {"q#1": b"{}"}, None, None)
        assert await store.finish(done.task_id, 1, "completed", b"{}", None)
        assert await store.claim_due("b", 5000, {}) == []  # nothing is due yet
        due_in = await store.next_due_in()
        assert due_in is not None and due_in <= 100
        await asyncio.sleep(0.2)
        claims = await asyncio.gather(store.claim_due("b", 5000, {}), store.claim_due("c", 5000, {}))
        assert sorted(claims, key=len) == [[], [(lapsing.task_id, 2)]]  # one taker, a new attempt
        got = await store.get(lapsing.task_id)
        assert got is not None and got.attempt == 2 and got.holder in ("b", "c")
        assert not await store.finish(lapsing.task_id, 1, "completed", b"{}", None)  # the dead attempt is fenced
        due_in = await store.next_due_in()
        assert due_in is not None and due_in > 4000  # only the claimed task is scheduled
        await store.release(lapsing.task_id, got.holder or "", 2)  # a stopping instance lets it lapse now
        assert [c[0] for c in await store.claim_due("d", 5000, {})] == [lapsing.task_id]
    finally:
        await client.aclose()


async def test_redis_answers_a_finished_task_from_its_cache(redis_url: str) -> None:
    import redis.asyncio as redis_asyncio

    from mcpcore.tasks.redis import RedisTaskStore

    client = redis_asyncio.from_url(redis_url)
    try:
        store = RedisTaskStore(client, namespace=f"test-{uuid.uuid4().hex[:8]}")
        working, done, brief = state(), state(), state(ttl_ms=1000, created=now_ms() - 800)
        for st in (working, done, brief):
            assert await store.create(st, lease_ms=5000) == "created"
            assert await store.get(st.task_id) is not None
        assert await store.finish(done.task_id, 1, "completed", b'{"content":[]}', None)
        assert await store.finish(brief.task_id, 1, "completed", b'{"content":[]}', None)
        assert (await store.get(done.task_id)).status == "completed"  # type: ignore[union-attr]
        await client.delete(store.key(working.task_id), store.key(done.task_id))
        assert await store.get(working.task_id) is None  # a working task is read from Redis every time
        cached = await store.get(done.task_id)  # a finished one no more
        assert cached is not None and cached.outcome == b'{"content":[]}'
        await store.get(brief.task_id)
        await asyncio.sleep(0.3)
        assert await store.get(brief.task_id) is None  # the cache keeps to the TTL
    finally:
        await client.aclose()


async def test_an_account_keeps_a_bounded_number_of_tasks(store: TaskStore) -> None:
    store.bounds = TaskBounds(active=2, kept=3)
    old, newer = [await made(store, owner="kim") for _ in range(2)]
    for st in (old, newer):
        assert await store.finish(st.task_id, 1, "completed", b'{"content":[]}', None)
    running = await made(store, owner="kim")
    latest = await made(store, owner="kim")  # room made by forgetting the finished task expiring first
    assert await store.get(old.task_id) is None
    assert await store.get(newer.task_id) is not None and await store.get(running.task_id) is not None
    assert await store.get(latest.task_id) is not None
    assert await store.create(state(owner="kim"), lease_ms=5000) == "too_many"  # 2 unfinished: never forgotten
    assert await store.get(running.task_id) is not None


async def test_an_account_keeps_a_bounded_number_of_bytes(store: TaskStore) -> None:
    store.bounds = TaskBounds(active=3, kept=100, bytes=40_000)
    first = await made(store, owner="lee")
    big = b'{"content":[],"structuredContent":{"x":"' + b"y" * 15_000 + b'"}}'
    assert await store.finish(first.task_id, 1, "completed", big, None)
    second = await made(store, owner="lee")
    assert await store.finish(second.task_id, 1, "completed", big, None)
    assert await store.get(first.task_id) is not None
    third = await made(store, owner="lee")
    assert await store.finish(third.task_id, 1, "completed", big, None)  # 3 x 15 KB: the oldest makes room
    assert await store.get(first.task_id) is None
    assert await store.get(second.task_id) is not None and await store.get(third.task_id) is not None
    assert (await store.page("lee", 0, 10))[0] and first.task_id not in {
        st.task_id for st in (await store.page("lee", 0, 10))[0]}


async def test_unfinished_tasks_that_fill_the_bytes_refuse_a_new_one(store: TaskStore) -> None:
    store.bounds = TaskBounds(active=10, kept=100, bytes=4000)
    fat = [state(owner="max") for _ in range(3)]
    for st in fat:
        object.__setattr__(st.meta, "arguments", {"x": "z" * 1500})
    assert await store.create(fat[0], lease_ms=5000) == "created"
    assert await store.create(fat[1], lease_ms=5000) == "created"
    assert await store.create(fat[2], lease_ms=5000) == "too_large"
    assert await store.get(fat[2].task_id) is None
    assert await store.create(state(owner="ned"), lease_ms=5000) == "created"  # another account is not affected


async def _redis_store(redis_url: str, **kw: Any) -> tuple[Any, Any]:
    import redis.asyncio as redis_asyncio

    from mcpcore.tasks.redis import RedisTaskStore

    client = redis_asyncio.from_url(redis_url)
    return client, RedisTaskStore(client, namespace=f"test-{uuid.uuid4().hex[:8]}", **kw)


async def test_an_instance_renews_its_own_running_attempt_instead_of_taking_it_over(redis_url: str) -> None:
    client, store = await _redis_store(redis_url)
    try:
        st = state(holder="me")
        assert await store.create(st, lease_ms=100) == "created"
        await asyncio.sleep(0.2)  # lapsed: its holder could not renew (the store was away)
        assert await store.claim_due("me", 5000, {st.task_id: 1}) == []
        got = await store.get(st.task_id)
        assert got is not None and got.attempt == 1 and got.holder == "me"
        assert await store.claim_due("other", 5000, {}) == []  # renewed: held again
        assert await store.renew({st.task_id: 1}, "me", 5000) == set()
    finally:
        await client.aclose()


async def test_leases_are_timed_on_the_stores_clock(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import mcpcore.tasks.record
    import mcpcore.tasks.redis

    client, store = await _redis_store(redis_url)
    try:
        st = state(holder="a")
        assert await store.create(st, lease_ms=2000) == "created"
        ahead = now_ms() + 15_000  # this instance's wall clock runs 15 s ahead
        monkeypatch.setattr(mcpcore.tasks.redis, "now_ms", lambda: ahead)
        monkeypatch.setattr(mcpcore.tasks.record, "now_ms", lambda: ahead)
        due_in = await store.next_due_in()
        assert due_in is not None and 1000 < due_in <= 2000
        assert await store.claim_due("b", 2000, {}) == []
        got = await store.get(st.task_id)
        assert got is not None and got.holder == "a" and got.attempt == 1
    finally:
        await client.aclose()


async def test_the_redis_cache_counts_everything_a_task_holds(redis_url: str) -> None:
    client, store = await _redis_store(redis_url, cache_bytes=1_000_000)
    try:
        ids = []
        for _ in range(20):
            st = state()
            object.__setattr__(st.meta, "arguments", {"x": "w" * 50_000})
            assert await store.create(st, lease_ms=5000) == "created"
            assert await store.finish(st.task_id, 1, "completed", b'{"content":[]}', None)
            ids.append(st.task_id)
        for tid in ids:
            assert await store.get(tid) is not None
        kept = list(store._done.values())
        assert 0 < len(kept) < 20
        assert all(st.size > 50_000 for st in kept)
        assert store._done_bytes == sum(st.size for st in kept) <= 1_000_000
    finally:
        await client.aclose()
