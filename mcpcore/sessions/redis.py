"""Sessions in Redis, shared by every instance: sliding idle expiry, a capacity cap."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson

from ..errors import JsonRpcErrorCode, McpError
from .base import SessionRecord
from .memory import SessionCapacityError

__all__ = ["RedisSessionStore", "redis_unavailable"]

T = TypeVar("T")

# Create atomically: the identity's room check, then the global one (each dropping expired index
# entries first and evicting its least recently used session idle long enough), record, indexes.
# KEYS: record, global index, identity index ('' when anonymous).
# ARGV: record json, idle ms, now ms, max sessions, evict-after ms, record key prefix, id,
#       max per identity.
_CREATE = """
local now = tonumber(ARGV[3])
local idle = tonumber(ARGV[2])
local prefix = ARGV[6]
local function room(index, cap)
  redis.call('ZREMRANGEBYSCORE', index, '-inf', now - idle)
  if redis.call('ZCARD', index) < cap then return true end
  local oldest = redis.call('ZRANGE', index, 0, 0, 'WITHSCORES')
  if oldest[1] == nil or now - tonumber(oldest[2]) < tonumber(ARGV[5]) then return false end
  redis.call('ZREM', KEYS[2], oldest[1])
  if index ~= KEYS[2] then redis.call('ZREM', index, oldest[1]) end
  redis.call('DEL', prefix .. oldest[1] .. '}:rec', prefix .. oldest[1] .. '}:events')
  return true
end
if KEYS[3] ~= '' then
  for _, sid in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    if redis.call('EXISTS', prefix .. sid .. '}:rec') == 0 then redis.call('ZREM', KEYS[3], sid) end
  end
  if not room(KEYS[3], tonumber(ARGV[8])) then return -1 end
end
if not room(KEYS[2], tonumber(ARGV[4])) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', idle)
redis.call('ZADD', KEYS[2], now, ARGV[7])
if KEYS[3] ~= '' then
  redis.call('ZADD', KEYS[3], now, ARGV[7])
  redis.call('PEXPIRE', KEYS[3], idle)
end
return 1
"""


def redis_unavailable(exc: BaseException) -> McpError:
    return McpError(JsonRpcErrorCode.ServiceUnavailable,
                    "The session store (Redis) is unreachable; retry shortly.", {"reason": "store_unavailable"})


async def guarded(op: Awaitable[T]) -> T:
    """Run a Redis operation; connection failures become ``McpError(ServiceUnavailable)``."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    try:
        return await op
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise redis_unavailable(exc) from exc


class RedisSessionStore:
    """A :class:`~mcpcore.sessions.base.SessionStore` in Redis.

    Records live at ``{ns:s:<id>}:rec`` with a TTL equal to the idle timeout, refreshed on every
    use (``GETEX``); an index sorted set ``{ns}:sessions`` (score: last use) counts them for the
    cap. When full, the least recently used session idle for at least ``evict_after_ms`` is
    evicted before a new one is refused. One authenticated identity holds at most
    ``max_per_identity`` sessions, counted in its own sorted set by the same rule.
    """

    def __init__(self, client: Any, *, namespace: str = "mcpcore", idle_ms: int = 1_800_000,
                 max_sessions: int = 10_000, max_per_identity: int = 100, evict_after_ms: int = 60_000) -> None:
        self.r = client
        self.ns = namespace
        self.idle_ms = idle_ms
        self.max_sessions = max_sessions
        self.max_per_identity = max_per_identity
        self.evict_after_ms = evict_after_ms
        self.index = f"{{{namespace}}}:sessions"
        self.on_evict: Callable[[str], None] | None = None
        self._create = client.register_script(_CREATE)

    def _key(self, session_id: str) -> str:
        return f"{{{self.ns}:s:{session_id}}}:rec"

    def _identity_key(self, identity: tuple[str, str, str]) -> str:
        digest = hashlib.sha256("\x00".join(identity).encode()).hexdigest()[:32]
        return f"{{{self.ns}}}:idn:{digest}"

    async def create(self, record: SessionRecord) -> None:
        now = int(time.time() * 1000)
        idn = self._identity_key(record.identity) if record.identity is not None else ""
        ok = await guarded(self._create(keys=[self._key(record.id), self.index, idn], args=[
            orjson.dumps(record.to_json()), self.idle_ms, now, self.max_sessions, self.evict_after_ms,
            f"{{{self.ns}:s:", record.id, self.max_per_identity]))
        if ok == -1:
            raise SessionCapacityError(self.max_per_identity)
        if not ok:
            raise SessionCapacityError(self.max_sessions)

    async def get(self, session_id: str) -> SessionRecord | None:
        raw = await guarded(self.r.getex(self._key(session_id), px=self.idle_ms))
        if raw is None:
            return None
        record = SessionRecord.from_json(orjson.loads(raw))
        now = int(time.time() * 1000)
        if record.identity is None:
            await guarded(self.r.zadd(self.index, {session_id: now}))
            return record
        async with self.r.pipeline(transaction=False) as pipe:
            pipe.zadd(self.index, {session_id: now})
            pipe.zadd(self._identity_key(record.identity), {session_id: now})
            pipe.pexpire(self._identity_key(record.identity), self.idle_ms)
            await guarded(pipe.execute())
        return record

    async def save(self, record: SessionRecord) -> None:
        await guarded(self.r.set(self._key(record.id), orjson.dumps(record.to_json()), px=self.idle_ms, xx=True))
        if record.identity is not None:  # bound on its first authenticated use
            key = self._identity_key(record.identity)
            async with self.r.pipeline(transaction=False) as pipe:
                pipe.zadd(key, {record.id: int(time.time() * 1000)})
                pipe.pexpire(key, self.idle_ms)
                await guarded(pipe.execute())

    async def delete(self, session_id: str) -> bool:
        async with self.r.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(session_id))
            pipe.zrem(self.index, session_id)
            res = await guarded(pipe.execute())
        return bool(res[0])

    async def count(self) -> int:
        now = int(time.time() * 1000)
        await guarded(self.r.zremrangebyscore(self.index, "-inf", now - self.idle_ms))
        return int(await guarded(self.r.zcard(self.index)))

    async def sweep(self) -> int:
        now = int(time.time() * 1000)
        return int(await guarded(self.r.zremrangebyscore(self.index, "-inf", now - self.idle_ms)))

    async def ping(self) -> None:
        await guarded(self.r.ping())

    async def close(self) -> None:
        return None
