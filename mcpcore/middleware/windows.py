"""Sliding windows for the rate limiter: in this process, or in Redis for every instance at once.

Both keep, per key, the times of the calls admitted in the last window, and admit a call only
while fewer than the limit are in it, so no window of that length, wherever it starts, ever
holds more than the limit. In Redis the check and the admission are one Lua script on a sorted
set, timed by the Redis server's clock (``TIME``), so instances with skewed clocks still share
one window; the key expires with its window.
"""

from __future__ import annotations

import os
import time
from collections import deque
from typing import Any, Protocol

__all__ = ["MemoryWindows", "RedisWindows", "Windows"]


class Windows(Protocol):
    """Where the calls of each key's current window are counted."""

    async def hit(self, key: str, limit: int, window_ms: int) -> int:
        """Admit one call for ``key`` (``0``) or refuse it: then the milliseconds until the oldest
        call in the window leaves it."""
        ...


class MemoryWindows:
    """Windows in this process (one instance; each worker of a multi-worker server has its own)."""

    def __init__(self, max_keys: int = 100_000, clock: Any = time.monotonic) -> None:
        self.max_keys = max_keys
        self._clock = clock
        self._calls: dict[str, deque[float]] = {}

    async def hit(self, key: str, limit: int, window_ms: int) -> int:
        now = self._clock()
        window = window_ms / 1000
        calls = self._calls.get(key)
        if calls is None:
            if len(self._calls) >= self.max_keys:
                self._forget(now, window)
            calls = self._calls[key] = deque()
        while calls and calls[0] <= now - window:
            calls.popleft()
        if len(calls) < limit:
            calls.append(now)
            return 0
        return max(1, int((calls[0] + window - now) * 1000 + 0.999))

    def _forget(self, now: float, window: float) -> None:
        for key in [k for k, calls in self._calls.items() if not calls or calls[-1] <= now - window]:
            del self._calls[key]
        while len(self._calls) >= self.max_keys:
            del self._calls[next(iter(self._calls))]


# KEYS[1]: the key's sorted set of admitted calls (scores: Redis time in microseconds).
# ARGV: limit, window in microseconds, a member unique to this call.
# Returns 0 when admitted, else the milliseconds until the oldest admitted call leaves the window.
HIT = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, math.ceil((tonumber(oldest[2]) + window - now) / 1000))
"""


class RedisWindows:
    """Windows in Redis, shared by every instance (standalone, Cluster or Sentinel: one key per
    script). Raises :class:`~mcpcore.McpError` (``ServiceUnavailable``) while Redis is away."""

    def __init__(self, client: Any, namespace: str = "mcpcore:rl") -> None:
        # Imported here: redis_client loads redis-py, which an app without Redis never needs.
        from ..redis_client import guarded

        self._guarded = guarded
        self.client = client
        self.namespace = namespace
        self._hit = client.register_script(HIT)

    async def hit(self, key: str, limit: int, window_ms: int) -> int:
        member = os.urandom(8).hex()
        result = await self._guarded(self._hit(keys=[f"{self.namespace}:{{{key}}}"],
                                         args=[limit, window_ms * 1000, member]))
        return int(result)
