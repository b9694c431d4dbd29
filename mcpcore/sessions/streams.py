"""How many streams each session holds open (standalone GET and ``Last-Event-ID`` resumes), and
how many long-lived streams each caller holds open in this process.

Every GET stream takes a slot of its session before it starts and gives it back when it ends;
past ``MCP_HTTP_MAX_STREAMS_PER_SESSION`` a new one is refused (409). With Redis the slots are
shared by every instance: a sorted set per session, member a stream token, score the lease's
end, renewed by the holder's sweep; a dead instance's slots lapse with their lease.

:class:`CallerStreams` counts every long-lived stream (``subscriptions/listen``, GET streams,
HTTP+SSE streams) per caller against ``MCP_HTTP_MAX_STREAMS_PER_IDENTITY``: they hold a
connection each, and the connection bound is per process too.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Hashable
from typing import Any, Protocol

from ..context import AuthInfo
from ..errors import JsonRpcErrorCode, McpError

__all__ = ["CallerStreams", "MemoryStreamSlots", "RedisStreamSlots", "StreamSlots", "caller_of"]


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


def caller_of(auth: AuthInfo | None, scope: Any) -> Hashable | None:
    """Who holds a stream: the token's tenant, client and subject; without auth the peer's
    address (``scope``: the ASGI scope); ``None`` when neither is known (stdio)."""
    if auth is not None:
        return (auth.tenant_id or "", auth.client_id, auth.subject or "")
    peer = scope.get("client") if scope is not None else None
    return ("address", peer[0]) if peer else None


class CallerStreams:
    """Long-lived streams per caller in this process, at most ``cap`` each."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._held: dict[Hashable, int] = {}

    def take(self, caller: Hashable | None) -> None:
        """Count a new stream of ``caller``.

        Raises:
            McpError: ``ServiceUnavailable`` (503 with ``Retry-After``) when it holds ``cap``.
        """
        if caller is None:
            return
        held = self._held.get(caller, 0)
        if held >= self.cap:
            raise McpError(JsonRpcErrorCode.ServiceUnavailable, f"This caller holds {self.cap} open streams "
                           "already (MCP_HTTP_MAX_STREAMS_PER_IDENTITY); close one or retry later.",
                           {"reason": "too_many_streams"})
        self._held[caller] = held + 1

    def give(self, caller: Hashable | None) -> None:
        """A stream of ``caller`` ended."""
        held = self._held.get(caller, 0) if caller is not None else 0
        if held > 1:
            self._held[caller] = held - 1
        elif held:
            del self._held[caller]

    def count(self, caller: Hashable | None) -> int:
        return self._held.get(caller, 0) if caller is not None else 0


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
