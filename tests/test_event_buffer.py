"""The event buffers themselves (memory and Redis), below the transport: ids, replay of one
stream exactly once then following it to its end, bounds by count and age, release."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpcore.sessions.events import PRIME, MemoryEventBuffer, split_event_id
from mcpcore.transports.exchange import StreamSink

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "redis"])
async def make_buffer(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    clients: list[Any] = []

    def make(max_events: int = 512, ttl_ms: int = 300_000) -> Any:
        if request.param == "memory":
            return MemoryEventBuffer(max_events, ttl_ms)
        import redis.asyncio as redis_asyncio

        from mcpcore.sessions.redis_events import RedisEventBuffer

        client = redis_asyncio.from_url(request.getfixturevalue("redis_url"))
        clients.append(client)
        return RedisEventBuffer(client, namespace=f"t-{uuid.uuid4().hex[:8]}", max_events=max_events,
                                ttl_ms=ttl_ms, block_ms=50)

    yield make
    for c in clients:
        await c.aclose()


def seq(event_id: str) -> str:
    parsed = split_event_id(event_id)
    assert parsed is not None
    return parsed[1]


async def drain(gen: Any, timeout: float = 2.0) -> list[tuple[str, bytes]]:
    out = []
    async with asyncio.timeout(timeout):
        async for item in gen:
            out.append(item)
    return out


async def test_ids_are_unique_per_stream_and_replay_is_one_stream_exactly_once(make_buffer: Any) -> None:
    buf = make_buffer()
    ids_a = [await buf.append("s1", "A", PRIME)]
    ids_b = [await buf.append("s1", "B", PRIME)]
    for i in range(5):
        ids_a.append(await buf.append("s1", "A", b'{"a":%d}' % i))
        ids_b.append(await buf.append("s1", "B", b'{"b":%d}' % i))
    assert len(set(ids_a + ids_b)) == 12
    assert all(i.startswith("A_") for i in ids_a) and all(i.startswith("B_") for i in ids_b)
    await buf.end("s1", "A")
    got = await drain(buf.follow("s1", "A", seq(ids_a[2])))
    assert [d for _, d in got] == [b'{"a":%d}' % i for i in range(2, 5)]
    assert [e for e, _ in got] == ids_a[3:]
    got = await drain(buf.follow("s1", "A", seq(ids_a[0])))  # from the priming event
    assert len(got) == 5


async def test_follow_waits_for_live_events_until_the_end(make_buffer: Any) -> None:
    buf = make_buffer()
    first = await buf.append("s1", "A", PRIME)
    task = asyncio.ensure_future(drain(buf.follow("s1", "A", seq(first)), 5))
    await asyncio.sleep(0.1)
    for i in range(3):
        await buf.append("s1", "B", b'{"other":%d}' % i)  # another stream wakes the follower: ignored
        await buf.append("s1", "A", b'{"n":%d}' % i)
        await asyncio.sleep(0.02)
    await buf.end("s1", "A")
    await buf.append("s1", "A", b'{"after":"end"}')
    got = await task
    assert [d for _, d in got] == [b'{"n":0}', b'{"n":1}', b'{"n":2}']


async def test_unknown_foreign_or_evicted_ids_are_refused(make_buffer: Any) -> None:
    buf = make_buffer(max_events=4)
    ids = [await buf.append("s1", "A", b'{"n":%d}' % i) for i in range(6)]
    other = await buf.append("s1", "B", b"{}")
    for after in (seq(ids[0]), seq(ids[1]), seq(ids[2]), seq(other), "999999", "0-1"):
        with pytest.raises(LookupError):
            await anext(buf.follow("s1", "A", after))
    with pytest.raises(LookupError):
        await anext(buf.follow("nobody", "A", seq(ids[-1])))
    await buf.end("s1", "A")  # the end marker evicts ids[3]
    assert [d for _, d in await drain(buf.follow("s1", "A", seq(ids[4])))] == [b'{"n":5}']


async def test_events_older_than_the_ttl_are_gone(make_buffer: Any) -> None:
    buf = make_buffer(ttl_ms=300)
    old = await buf.append("s1", "A", b'{"n":0}')
    await asyncio.sleep(0.45)
    new = await buf.append("s1", "A", b'{"n":1}')
    with pytest.raises(LookupError):
        await anext(buf.follow("s1", "A", seq(old)))
    await buf.end("s1", "A")
    assert await drain(buf.follow("s1", "A", seq(new))) == []


async def test_release_drops_the_session_and_ends_its_followers(make_buffer: Any) -> None:
    buf = make_buffer()
    first = await buf.append("s1", "A", PRIME)
    task = asyncio.ensure_future(drain(buf.follow("s1", "A", seq(first)), 5))
    await asyncio.sleep(0.1)
    await buf.release("s1")
    assert await task == []
    with pytest.raises(LookupError):
        await anext(buf.follow("s1", "A", seq(first)))


async def test_sink_frames_events_with_the_ids_it_stored(make_buffer: Any) -> None:
    buf = make_buffer()
    sink = StreamSink(buf, "s1", prime=True, retry_ms=1000)
    prime = await sink.priming()
    frames = [await sink.event(b'{"n":%d}' % i) for i in range(3)]
    await sink.end()
    assert prime.startswith(b"id: " + sink.stream_id.encode() + b"_") and b"retry: 1000\n" in prime
    prime_id = prime.split(b"\n")[0][4:].decode()
    ids = [f.split(b"\n")[1][4:].decode() for f in frames]
    assert all(f.startswith(b"event: message\nid: ") and f.endswith(b"\n\n") for f in frames)
    got = await drain(buf.follow("s1", sink.stream_id, seq(prime_id)))
    assert got == [(i, b'{"n":%d}' % n) for n, i in enumerate(ids)]
    assert StreamSink(buf, "s1", prime=True, retry_ms=None).stream_id != sink.stream_id


async def test_memory_append_after_release_does_not_revive_a_stream_in_flight() -> None:
    buf = MemoryEventBuffer()
    sink = StreamSink(buf, "s1", prime=True, retry_ms=None)
    sink.priming_nowait()
    await buf.release("s1")
    sink.event_nowait(b"{}")
    sink.end_nowait()
    assert "s1" not in buf._sessions


@pytest.mark.parametrize("after", ["\u00b2", "abc", "-1", "1-x", "9" * 40, "1.5", ""])
async def test_a_malformed_resume_point_is_an_unknown_id(make_buffer: Any, after: str) -> None:
    buf = make_buffer()
    await buf.append("s1", "A", b'{"a":1}')
    with pytest.raises(LookupError):
        await drain(buf.follow("s1", "A", after))


async def test_redis_buffer_keeps_a_byte_budget_per_session(redis_url: str) -> None:
    import redis.asyncio as redis_asyncio

    from mcpcore.sessions.redis_events import RedisEventBuffer

    client = redis_asyncio.from_url(redis_url)
    try:
        buf = RedisEventBuffer(client, namespace=f"t-{uuid.uuid4().hex[:8]}", max_events=1000, max_bytes=10_000,
                               block_ms=50)
        ids = [await buf.append("s1", "A", b"x" * 1000) for _ in range(30)]
        assert 9_000 <= await buf.bytes_of("s1") <= 10_000
        assert await client.xlen(buf.key("s1")) == 10
        with pytest.raises(LookupError):  # the oldest went first
            await drain(buf.follow("s1", "A", seq(ids[0])))
        await buf.append("s1", "A", b"y" * 50_000)  # one larger than the budget stays, alone
        assert await client.xlen(buf.key("s1")) == 1 and await buf.bytes_of("s1") == 50_000
        await buf.release("s1")
        assert await buf.bytes_of("s1") == 0
    finally:
        await client.aclose()


async def test_the_sweep_drops_expired_events_that_nobody_replays() -> None:
    buf = MemoryEventBuffer(max_events=100, ttl_ms=1000)
    first = await buf.append("s1", "A", b"x" * 500)
    await buf.append("s2", "A", b"y" * 500)
    assert buf.total_bytes == 1000
    for s in buf._sessions.values():  # as if the TTL had passed for every entry
        s.entries = type(s.entries)(((q, st, d, t - 5, e) for q, st, d, t, e in s.entries), maxlen=s.entries.maxlen)
    assert buf.sweep() == 1000 and buf.total_bytes == 0 and buf.largest_session_bytes() == 0
    nxt = await buf.append("s1", "A", b"z")
    assert int(seq(nxt)) > int(seq(first))  # the session's ids keep counting up after the sweep
