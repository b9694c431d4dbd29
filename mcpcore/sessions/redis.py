"""Sessions in Redis, shared by every instance: sliding idle expiry, a capacity cap."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson

from ..errors import JsonRpcErrorCode, McpError
from .base import SessionRecord
from .memory import SessionCapacityError

__all__ = ["RedisSessionStore", "redis_unavailable"]

T = TypeVar("T")

# Create atomically: room check (dropping expired index entries first), record, index.
_CREATE = """
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[2]))
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if oldest[1] == nil or now - tonumber(oldest[2]) < tonumber(ARGV[5]) then return 0 end
  redis.call('ZREM', KEYS[2], oldest[1])
  redis.call('DEL', ARGV[6] .. oldest[1] .. '}:rec', ARGV[6] .. oldest[1] .. '}:events')
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[7])
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
    evicted before a new one is refused.
    """

    def __init__(self, client: Any, *, namespace: str = "mcpcore", idle_ms: int = 1_800_000,
                 max_sessions: int = 10_000, evict_after_ms: int = 60_000) -> None:
        self.r = client
        self.ns = namespace
        self.idle_ms = idle_ms
        self.max_sessions = max_sessions
        self.evict_after_ms = evict_after_ms
        self.index = f"{{{namespace}}}:sessions"
        self.on_evict: Callable[[str], None] | None = None
        self._create = client.register_script(_CREATE)

    def _key(self, session_id: str) -> str:
        return f"{{{self.ns}:s:{session_id}}}:rec"

    async def create(self, record: SessionRecord) -> None:
        now = int(time.time() * 1000)
        ok = await guarded(self._create(keys=[self._key(record.id), self.index], args=[
            orjson.dumps(record.to_json()), self.idle_ms, now, self.max_sessions, self.evict_after_ms,
            f"{{{self.ns}:s:", record.id]))
        if not ok:
            raise SessionCapacityError(self.max_sessions)

    async def get(self, session_id: str) -> SessionRecord | None:
        raw = await guarded(self.r.getex(self._key(session_id), px=self.idle_ms))
        if raw is None:
            return None
        await guarded(self.r.zadd(self.index, {session_id: int(time.time() * 1000)}))
        return SessionRecord.from_json(orjson.loads(raw))

    async def save(self, record: SessionRecord) -> None:
        await guarded(self.r.set(self._key(record.id), orjson.dumps(record.to_json()), px=self.idle_ms, xx=True))

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
