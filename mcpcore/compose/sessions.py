"""Where a proxy keeps its 2025-era backend sessions: ``(caller, backend) -> (session id, version)``.

In memory for one process, in Redis when the app's stores are, so that every instance behind a
load balancer reuses the session another one opened. Opening a session is guarded: one caller
(on one instance) opens it while the others wait for what it stores.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["MemorySessionTable", "RedisSessionTable", "SessionTable"]

Session = tuple[str, str]

_FORGET = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_UNLOCK = _FORGET


def _pack(session: Session) -> str:
    return f"{session[1]} {session[0]}"


def _unpack(raw: Any) -> Session | None:
    if raw is None:
        return None
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    version, _, sid = text.partition(" ")
    return sid, version


class SessionTable:
    """The protocol both tables follow."""

    async def get(self, key: str) -> Session | None:
        raise NotImplementedError

    async def put(self, key: str, session: Session) -> None:
        raise NotImplementedError

    async def forget(self, key: str, lost: Session) -> None:
        """Forget ``key``'s session if it is still ``lost`` (another instance may have renewed it)."""
        raise NotImplementedError

    def opening(self, key: str) -> contextlib.AbstractAsyncContextManager[bool]:
        """Hold the right to open ``key``'s session; yields whether this caller holds it."""
        raise NotImplementedError

    async def wait(self, key: str, seconds: float = 10.0) -> Session | None:
        """What another opener stores for ``key`` (``None``: nothing came in time)."""
        deadline = asyncio.get_running_loop().time() + seconds
        while asyncio.get_running_loop().time() < deadline:
            found = await self.get(key)
            if found is not None:
                return found
            await asyncio.sleep(0.05)
        return None


class MemorySessionTable(SessionTable):
    """One process's table (the process's own locks are enough)."""

    def __init__(self) -> None:
        self._data: dict[str, Session] = {}

    async def get(self, key: str) -> Session | None:
        return self._data.get(key)

    async def put(self, key: str, session: Session) -> None:
        self._data[key] = session

    async def forget(self, key: str, lost: Session) -> None:
        if self._data.get(key) == lost:
            del self._data[key]

    @contextlib.asynccontextmanager
    async def opening(self, key: str) -> AsyncIterator[bool]:
        yield True


class RedisSessionTable(SessionTable):
    """A table every instance shares: one key per (backend, caller), refreshed on use."""

    def __init__(self, redis: Any, prefix: str, ttl_s: int) -> None:
        self.redis = redis
        self.prefix = prefix
        self.ttl_s = ttl_s
        self._forget = redis.register_script(_FORGET)
        self._unlock = redis.register_script(_UNLOCK)

    def _key(self, key: str) -> str:
        return f"{self.prefix}{{{key}}}"

    async def get(self, key: str) -> Session | None:
        return _unpack(await self.redis.get(self._key(key)))

    async def put(self, key: str, session: Session) -> None:
        await self.redis.set(self._key(key), _pack(session), ex=self.ttl_s)

    async def forget(self, key: str, lost: Session) -> None:
        await self._forget(keys=[self._key(key)], args=[_pack(lost)])

    @contextlib.asynccontextmanager
    async def opening(self, key: str) -> AsyncIterator[bool]:
        lock = self._key(key) + ":opening"
        token = secrets.token_hex(8)
        mine = bool(await self.redis.set(lock, token, nx=True, px=15_000))
        try:
            yield mine
        finally:
            if mine:
                await self._unlock(keys=[lock], args=[token])
