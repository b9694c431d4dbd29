"""Sliding windows for the rate limiter: in this process, or in Redis for every instance at once.

Both keep, per key, the times of the calls admitted in the last window, and admit a call only
while fewer than the limit are in it, so no window of that length, wherever it starts, ever
holds more than the limit. In Redis the check and the admission are one Lua script on a sorted
set, timed by the Redis server's clock (``TIME``), so instances with skewed clocks still share
one window; the key expires with its window.
"""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict, deque
from typing import Any, Protocol

__all__ = ["MemoryWindows", "RedisWindows", "Windows"]

log = logging.getLogger("mcpcore.ratelimit")
_WARN_EVERY = 60.0


class Windows(Protocol):
    """Where the calls of each key's current window are counted."""

    async def hit(self, key: str, limit: int, window_ms: int) -> int:
        """Admit one call for ``key`` (``0``) or refuse it: then the milliseconds until the oldest
        call in the window leaves it."""
        ...


class _Window:
    """One key's admitted calls and when the last of them leaves the window."""

    __slots__ = ("calls", "until")

    def __init__(self) -> None:
        self.calls: deque[float] = deque()
        self.until = 0.0


class MemoryWindows:
    """Windows in this process (one instance; each worker of a multi-worker server has its own).

    At most ``max_keys`` keys are kept. A key whose window has ended makes room for a new one;
    a live window is never dropped, so while every kept window is live a call with a new key is
    refused until the earliest of them ends. Keys are kept in the order of their last admitted
    call, so finding the room takes constant time, however many keys there are.
    """

    def __init__(self, max_keys: int = 100_000, clock: Any = time.monotonic) -> None:
        self.max_keys = max_keys
        self._clock = clock
        self._keys: OrderedDict[str, _Window] = OrderedDict()
        self._warned = -_WARN_EVERY

    def __len__(self) -> int:
        return len(self._keys)

    async def hit(self, key: str, limit: int, window_ms: int) -> int:
        now = self._clock()
        window = window_ms / 1000
        keys = self._keys
        w = keys.get(key)
        if w is None:
            if len(keys) >= self.max_keys:
                oldest = keys[next(iter(keys))]
                if oldest.until > now:
                    return self._full(oldest.until - now)
                keys.popitem(last=False)
            w = keys[key] = _Window()
        calls = w.calls
        while calls and calls[0] <= now - window:
            calls.popleft()
        if len(calls) < limit:
            calls.append(now)
            w.until = now + window
            keys.move_to_end(key)
            return 0
        return max(1, int((calls[0] + window - now) * 1000 + 0.999))

    def _full(self, wait: float) -> int:
        now = time.monotonic()
        if now - self._warned >= _WARN_EVERY:
            self._warned = now
            log.warning("the rate limiter holds %d live windows (max_keys): calls with new keys are refused "
                        "until the earliest window ends", self.max_keys)
        return max(1, int(wait * 1000 + 0.999))


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
