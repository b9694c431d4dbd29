"""Sessions in Redis, shared by every instance: sliding idle expiry, a capacity cap, and a
per-instance cache of records kept coherent over the notification bus."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, Protocol

import orjson

from ..redis_client import guarded, is_cluster, redis_unavailable
from .base import SessionRecord
from .memory import SessionCapacityError
from .redis_events import events_key
from .redis_scripts import CREATE, REFRESH

__all__ = ["INVALIDATION_KIND", "InvalidationBus", "RedisSessionStore", "redis_unavailable"]

INVALIDATION_KIND = "session"
"""Bus events ``{"kind": "session", "id": <session id>}``: that record changed, and every
instance drops its cached copy; with ``"gone": true`` the session was deleted or evicted, and
every instance also releases what it holds for it (``on_evict``: its open streams end)."""

class InvalidationBus(Protocol):
    """What the store needs from the shared bus (:class:`~mcpcore.bus.redis.RedisBus`)."""

    channel: str

    def subscribe(self, callback: Callable[[dict[str, Any]], None]) -> Callable[[], None]: ...

    def on_reset(self, callback: Callable[[], None]) -> Callable[[], None]: ...

    @property
    def caught_up(self) -> bool: ...


class _Entry:
    __slots__ = ("record", "refreshed")

    def __init__(self, record: SessionRecord, refreshed: float) -> None:
        self.record = record
        self.refreshed = refreshed  # time.monotonic() of this instance's last read/refresh in Redis


class _Load:
    """One read of a record in flight; an invalidation received meanwhile marks it stale so
    the (possibly older) value it brings back is not cached."""

    __slots__ = ("stale",)

    def __init__(self) -> None:
        self.stale = False


class RedisSessionStore:
    """A :class:`~mcpcore.sessions.base.SessionStore` in Redis.

    Records live at ``{ns}:s:<id>:rec`` with a TTL equal to the idle timeout; an index sorted set
    ``{ns}:sessions`` (score: last use) counts them for the cap. Records, the indexes and the bus
    channel share the hash tag ``{ns}``, so on a Redis Cluster the create and refresh scripts and
    every transaction run on one node (the event streams, the bulk of the traffic, have one tag
    per session and spread over the cluster). When full, the least recently
    used session idle for at least ``evict_after_ms`` is evicted before a new one is refused. One
    authenticated identity holds at most ``max_per_identity`` sessions, counted in its own sorted
    set by the same rule.

    **The per-instance cache.** Once :meth:`attach`-ed to the shared bus, each instance keeps
    up to ``cache_size`` records (LRU) so that most requests cost no Redis command at all:

    * *Sliding expiry.* A cached record is served as is while this instance read or refreshed it
      in Redis less than ``refresh_ms`` ago (default ``min(idle / 10, 5 s)``); after that the next
      request runs one script that re-reads the record, extends its TTL and bumps its index
      scores. A record found gone there is dropped and the request gets "no such session". So
      a session used only here still slides, and expires between ``idle - refresh`` and
      ``idle`` after its last use (the TTL is extended at most every ``refresh_ms``).
    * *One read at a time.* While a record is being read (a refresh, or a first read here),
      other requests for the same session wait for that read instead of sending their own, so
      a busy session costs one script per ``refresh_ms`` whatever its concurrency (not one per
      request in flight, each on a connection of its own). A request that arrives after an
      announcement about the session does not join a read started before it.
    * *Invalidation.* ``save``, ``delete`` and capacity evictions (inside the create script)
      publish ``{"kind": "session", "id": ...}`` on the bus channel in the same round trip as
      the write, after it, so before the caller answers its client. Every instance (this one
      included) drops its copy when the event arrives; the next request there reads Redis.
      Deletions and evictions say ``"gone": true``, and every instance then calls
      ``on_evict``, which ends the streams it holds open for that session.
    * *Bus health.* The cache is used only while the bus is :attr:`~InvalidationBus.caught_up`
      (subscribed, its connection the one it last verified, and no unread event waiting in the
      socket buffer). When the bus loses or re-establishes its subscription it resets: the whole
      cache is dropped, since announcements may have been missed. With Redis unreachable the
      bus is down, so requests read Redis and get 503 as without a cache.

    **Remaining windows** (each closed at the latest by the next refresh, ``refresh_ms`` later,
    since a refresh re-reads the record): an instance serves its cached copy until it has
    *received* the announcement, so a client that gets its DELETE answer from instance A and
    sends the next request to B at once sees B's stale copy only if that request reaches B's
    event loop before the announcement Redis wrote to B at the same time as its reply to A (a
    slow or backlogged bus connection, or a second pending bus event in the parser's buffer);
    a write that Redis executes while the bus is resubscribing after a reconnect may go
    unannounced; and ``save`` is read-modify-write of the whole record, as without a cache,
    so two instances changing one session at once keep the last write.
    """

    def __init__(self, client: Any, *, namespace: str = "mcpcore", idle_ms: int = 1_800_000,
                 max_sessions: int = 10_000, max_per_identity: int = 100, evict_after_ms: int = 60_000,
                 cache_size: int = 4096, refresh_ms: int | None = None) -> None:
        self.r = client
        self.ns = namespace
        self.idle_ms = idle_ms
        self.max_sessions = max_sessions
        self.max_per_identity = max_per_identity
        self.evict_after_ms = evict_after_ms
        self.index = f"{{{namespace}}}:sessions"
        self._probe_key = f"{{{namespace}}}:ready:{secrets.token_hex(8)}"
        self.on_evict: Callable[[str], None] | None = None
        self.cache_size = cache_size
        self.refresh_s = (min(idle_ms // 10, 5_000) if refresh_ms is None else refresh_ms) / 1000
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._loads: dict[str, list[_Load]] = {}
        self._flights: dict[str, asyncio.Task[SessionRecord | None]] = {}  # reads others may join
        self._bus: InvalidationBus | None = None
        self._channel = ""
        self._publish = "SPUBLISH" if is_cluster(client) else "PUBLISH"
        self._create = client.register_script(CREATE)
        self._refresh = client.register_script(REFRESH)

    # -- the bus --------------------------------------------------------------------------------

    def attach(self, bus: InvalidationBus) -> Callable[[], None]:
        """Cache records, kept coherent by ``bus`` (announce changes on it, drop copies on its
        events, clear everything on its resets); returns the function that detaches."""
        self._bus = bus
        self._channel = bus.channel
        unsubscribe = bus.subscribe(self._on_event)
        unreset = bus.on_reset(self.clear_cache)

        def detach() -> None:
            unsubscribe()
            unreset()
            self._bus = None
            self._channel = ""
            self.clear_cache()

        return detach

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("kind") == INVALIDATION_KIND:
            sid = event.get("id")
            if type(sid) is str:
                if event.get("gone") is True:
                    self._gone(sid)
                else:
                    self._forget(sid)

    def _gone(self, session_id: str) -> None:
        """The session was deleted or evicted (here, or on another instance as the bus says)."""
        self._forget(session_id)
        if self.on_evict is not None:
            self.on_evict(session_id)

    def _announcement(self, session_id: str, gone: bool = False) -> bytes:
        if gone:
            return orjson.dumps({"kind": INVALIDATION_KIND, "id": session_id, "gone": True})
        return orjson.dumps({"kind": INVALIDATION_KIND, "id": session_id})

    # -- the cache ------------------------------------------------------------------------------

    def clear_cache(self) -> None:
        """Drop every cached record (and keep reads in flight from caching what they bring, or
        from being joined by later requests)."""
        self._cache.clear()
        self._flights.clear()
        for loads in self._loads.values():
            for load in loads:
                load.stale = True

    def _forget(self, session_id: str) -> None:
        self._cache.pop(session_id, None)
        self._flights.pop(session_id, None)
        for load in self._loads.get(session_id, ()):
            load.stale = True

    def _begin(self, session_id: str) -> _Load | None:
        if self._bus is None:
            return None
        load = _Load()
        self._loads.setdefault(session_id, []).append(load)
        return load

    def _end(self, session_id: str, load: _Load | None) -> None:
        if load is None:
            return
        loads = self._loads.get(session_id)
        if loads is not None:
            loads.remove(load)
            if not loads:
                del self._loads[session_id]

    def _keep(self, record: SessionRecord, load: _Load | None, read_at: float) -> None:
        bus = self._bus
        if load is None or load.stale or bus is None or not bus.caught_up:
            return
        cache = self._cache
        cache[record.id] = _Entry(record, read_at)
        cache.move_to_end(record.id)
        while len(cache) > self.cache_size:
            cache.popitem(last=False)

    def __len__(self) -> int:
        return len(self._cache)

    # -- the store ------------------------------------------------------------------------------

    def _key(self, session_id: str) -> str:
        return f"{{{self.ns}}}:s:{session_id}:rec"

    def _keys(self, session_id: str, idn: str | None) -> list[str]:
        keys = [self._key(session_id), self.index]
        if idn is not None:
            keys.append(idn)
        return keys

    def _announce(self, pipe: Any, message: bytes) -> None:
        if self._publish == "SPUBLISH":
            pipe.spublish(self._channel, message)
        else:
            pipe.publish(self._channel, message)

    def _identity_key(self, identity: tuple[str, str, str]) -> str:
        digest = hashlib.sha256("\x00".join(identity).encode()).hexdigest()[:32]
        return f"{{{self.ns}}}:idn:{digest}"

    async def create(self, record: SessionRecord) -> None:
        now = int(time.time() * 1000)
        idn = self._identity_key(record.identity) if record.identity is not None else None
        load = self._begin(record.id)
        try:
            read_at = time.monotonic()
            res = await guarded(self._create(keys=self._keys(record.id, idn), args=[
                orjson.dumps(record.to_json()), self.idle_ms, now, self.max_sessions, self.evict_after_ms,
                f"{{{self.ns}}}:s:", record.id, self.max_per_identity, self._channel, self._publish]))
            evicted = [e.decode() if isinstance(e, bytes) else str(e) for e in res[1:]]
            for sid in evicted:
                self._gone(sid)
            if evicted:  # their event streams, each in its own slot
                await guarded(self.r.delete(*[events_key(self.ns, sid) for sid in evicted]))
            status = int(res[0])
            if status == -1:
                raise SessionCapacityError(self.max_per_identity)
            if status != 1:
                raise SessionCapacityError(self.max_sessions)
            self._keep(record, load, read_at)
        finally:
            self._end(record.id, load)

    async def get(self, session_id: str) -> SessionRecord | None:
        entry = self._cache.get(session_id)
        if entry is not None:
            bus = self._bus
            if bus is not None and bus.caught_up and time.monotonic() - entry.refreshed < self.refresh_s:
                self._cache.move_to_end(session_id)
                return entry.record
            return await self._joined_load(session_id, entry.record.identity)
        return await self._joined_load(session_id, None)

    async def _joined_load(self, session_id: str, identity: tuple[str, str, str] | None) -> SessionRecord | None:
        """``_load``, shared by the requests that need the same record at the same time: the
        first starts the read (in a task of its own, so that its client leaving does not cancel
        it for the others) and the rest wait for it. Only while the bus is caught up: a request
        then knows of every announcement made before it, and an announcement detaches the read
        (``_forget``), so nobody joins a read older than a change they could have seen."""
        bus = self._bus
        if bus is None or not bus.caught_up:
            return await self._load(session_id, identity)
        flight = self._flights.get(session_id)
        if flight is None:
            flight = asyncio.get_running_loop().create_task(self._load(session_id, identity))
            self._flights[session_id] = flight
            flight.add_done_callback(partial(self._landed, session_id))
        return await asyncio.shield(flight)

    def _landed(self, session_id: str, flight: asyncio.Task[SessionRecord | None]) -> None:
        """A shared read is done: later requests start their own; its error, if nobody is left to
        receive it, is not reported as never retrieved."""
        if self._flights.get(session_id) is flight:
            del self._flights[session_id]
        if not flight.cancelled():
            flight.exception()

    async def _load(self, session_id: str, identity: tuple[str, str, str] | None) -> SessionRecord | None:
        """Read the record and slide its expiry (one script); cache it when nothing was
        announced about it meanwhile."""
        load = self._begin(session_id)
        try:
            read_at = time.monotonic()
            idn = self._identity_key(identity) if identity is not None else None
            raw = await guarded(self._refresh(keys=self._keys(session_id, idn),
                                              args=[self.idle_ms, int(time.time() * 1000), session_id]))
            if raw is None:
                self._cache.pop(session_id, None)
                return None
            record = SessionRecord.from_json(orjson.loads(raw))
            if record.identity is not None and record.identity != identity:  # first read here, or bound since
                key = self._identity_key(record.identity)
                async with self.r.pipeline(transaction=False) as pipe:
                    pipe.zadd(key, {session_id: int(time.time() * 1000)})
                    pipe.pexpire(key, self.idle_ms)
                    await guarded(pipe.execute())
            self._keep(record, load, read_at)
            return record
        except BaseException:
            self._cache.pop(session_id, None)
            raise
        finally:
            self._end(session_id, load)

    async def keep_alive(self, session_ids: Iterable[str]) -> list[str]:
        """Slide the expiry of sessions this instance is serving a stream or a long request
        for, as their requests would (Redis expires a record on its own, however busy the
        session is here); returns the ids whose records are gone."""
        gone = []
        for sid in session_ids:
            entry = self._cache.get(sid)
            if await self._load(sid, entry.record.identity if entry is not None else None) is None:
                gone.append(sid)
        return gone

    async def save(self, record: SessionRecord) -> None:
        """Write the record and announce the change (one round trip, the announcement after the
        write). The local copy is dropped too: the next request here re-reads Redis."""
        self._forget(record.id)
        try:
            async with self.r.pipeline(transaction=False) as pipe:
                pipe.set(self._key(record.id), orjson.dumps(record.to_json()), px=self.idle_ms, xx=True)
                if record.identity is not None:  # bound on its first authenticated use
                    key = self._identity_key(record.identity)
                    pipe.zadd(key, {record.id: int(time.time() * 1000)})
                    pipe.pexpire(key, self.idle_ms)
                if self._channel:
                    self._announce(pipe, self._announcement(record.id))
                await guarded(pipe.execute())
        finally:
            self._forget(record.id)  # reads that started before the write must not cache the old value

    async def delete(self, session_id: str) -> bool:
        """Delete the record and announce it (one transaction, the announcement last), so every
        instance has been sent it before the caller answers its client."""
        self._forget(session_id)
        try:
            async with self.r.pipeline(transaction=True) as pipe:
                pipe.delete(self._key(session_id))
                pipe.zrem(self.index, session_id)
                if self._channel:
                    self._announce(pipe, self._announcement(session_id, gone=True))
                res = await guarded(pipe.execute())
        finally:
            self._forget(session_id)
        return bool(res[0])

    async def count(self) -> int:
        now = int(time.time() * 1000)
        await guarded(self.r.zremrangebyscore(self.index, "-inf", now - self.idle_ms))
        return int(await guarded(self.r.zcard(self.index)))

    async def sweep(self) -> int:
        now = int(time.time() * 1000)
        limit = time.monotonic() - self.idle_ms / 1000  # not refreshed here for a whole idle period
        for sid in [sid for sid, e in self._cache.items() if e.refreshed < limit]:
            del self._cache[sid]
        return int(await guarded(self.r.zremrangebyscore(self.index, "-inf", now - self.idle_ms)))

    async def ping(self) -> None:
        """Write this process's probe key (``{ns}:ready:<token>``, in the sessions' slot, expiring
        after 10 s); ``McpError(ServiceUnavailable)`` when Redis does not answer or refuses writes
        (a demoted primary still answers ``PING``)."""
        await guarded(self.r.set(self._probe_key, b"1", px=10_000))

    async def close(self) -> None:
        self.clear_cache()
