"""How many streams each session holds open (standalone GET and ``Last-Event-ID`` resumes).

Every GET stream takes a slot of its session before it starts and gives it back when it ends;
past ``MCP_HTTP_MAX_STREAMS_PER_SESSION`` a new one is refused (409). With Redis the slots are
shared by every instance: a sorted set per session, member a stream token, score the lease's
end, renewed by the holder's sweep; a dead instance's slots lapse with their lease.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Protocol

__all__ = ["MemoryStreamSlots", "RedisStreamSlots", "StreamSlots"]


class StreamSlots(Protocol):
    """Counts open streams per session against a cap."""

    async def acquire(self, session_id: str) -> str | None:
        """A token for a new stream, or ``None`` when the session holds its most already."""
        ...

    async def release(self, session_id: str, token: str) -> None:
        """Give a stream's slot back."""
        ...

    async def renew(self) -> None:
        """Extend the leases of every slot this process holds (called periodically)."""
        ...

    def close(self) -> None:
        """The app is shutting down: stop using shared stores."""
        ...


def _forget(held: dict[str, set[str]], session_id: str, token: str) -> None:
    tokens = held.get(session_id)
    if tokens is not None:
        tokens.discard(token)
        if not tokens:
            del held[session_id]


class MemoryStreamSlots:
    """Slots counted in this process."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._held: dict[str, set[str]] = {}

    async def acquire(self, session_id: str) -> str | None:
        held = self._held.setdefault(session_id, set())
        if len(held) >= self.cap:
            return None
        token = secrets.token_hex(8)
        held.add(token)
        return token

    async def release(self, session_id: str, token: str) -> None:
        _forget(self._held, session_id, token)

    async def renew(self) -> None:
        return None

    def close(self) -> None:
        return None

    def count(self, session_id: str) -> int:
        return len(self._held.get(session_id, ()))


# KEYS: the session's slot set. ARGV: now ms, lease ms, cap, token. Returns 1 taken, 0 full.
_ACQUIRE = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[4])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
return 1
"""


class RedisStreamSlots:
    """Slots shared by every instance: ``{ns:s:<id>}:streams`` (the session's hash tag, so a
    Cluster keeps it in the session's slot)."""

    def __init__(self, client: Any, cap: int, *, namespace: str = "mcpcore", lease_ms: int = 180_000) -> None:
        self.r = client
        self.cap = cap
        self.ns = namespace
        self.lease_ms = lease_ms
        self._held: dict[str, set[str]] = {}
        self._acquire = client.register_script(_ACQUIRE)
        self.closed = False

    def close(self) -> None:
        """Stop talking to Redis (the app is shutting down): what is still held lapses with its lease."""
        self.closed = True

    def key(self, session_id: str) -> str:
        return f"{{{self.ns}:s:{session_id}}}:streams"

    async def acquire(self, session_id: str) -> str | None:
        if self.closed:
            return None
        token = secrets.token_hex(8)
        taken = await self._acquire(keys=[self.key(session_id)],
                                    args=[int(time.time() * 1000), self.lease_ms, self.cap, token])
        if not int(taken):
            return None
        self._held.setdefault(session_id, set()).add(token)
        return token

    async def release(self, session_id: str, token: str) -> None:
        _forget(self._held, session_id, token)
        if not self.closed:
            await self.r.zrem(self.key(session_id), token)

    async def renew(self) -> None:
        if self.closed:
            return
        until = int(time.time() * 1000) + self.lease_ms
        for session_id, tokens in list(self._held.items()):
            if tokens:
                await self.r.zadd(self.key(session_id), dict.fromkeys(tokens, until), xx=True)
                await self.r.pexpire(self.key(session_id), self.lease_ms * 2)
