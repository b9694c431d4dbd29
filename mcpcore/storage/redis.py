"""Redis storage (``redis.asyncio``): native TTL, MGET and MULTI pipelines, ``GETDEL`` for ``take``,
and a per-tenant sorted-set index for ordered prefix listing.

Keys of one tenant share a Redis Cluster hash tag, so every multi-key command and transaction stays
in one slot::

    {<namespace>:<tenant>}:k:<key>     the value (with PX expiry when a TTL is set)
    {<namespace>:<tenant>}:idx         sorted set of the tenant's keys, all with score 0

The index is written in the same MULTI as the value. Members whose value has expired are dropped
lazily by ``list`` with a script that re-checks the value inside Redis, so a key written again in
the meantime keeps its index entry.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from hashlib import sha256
from typing import Any
from urllib.parse import urlsplit

from redis import exceptions as rex
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from ..config import Settings
from ..errors import JsonRpcErrorCode, McpError
from ..metrics import count_redis_error
from ..redis_client import UNAVAILABLE, create_redis_client, describe_redis
from .base import ListPage

__all__ = ["RedisStorage"]

log = logging.getLogger("mcpcore.storage")

_SAFE_TENANT = re.compile(r"[A-Za-z0-9._-]{1,128}")
_BATCH = 1000

# Atomic GET + DEL + index removal, for servers older than 6.2 (no GETDEL).
_TAKE_LUA = """
local v = redis.call('GET', KEYS[1])
if v then redis.call('DEL', KEYS[1]) end
redis.call('ZREM', KEYS[2], ARGV[1])
return v
"""

# Drop index members whose value no longer exists, re-checked atomically inside Redis.
_CLEANUP_LUA = """
local n = 0
for i = 1, #ARGV do
  if redis.call('EXISTS', KEYS[i + 1]) == 0 then
    n = n + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return n
"""

_UNAVAILABLE = UNAVAILABLE
PROBE_TTL_MS = 10_000
"""How long a readiness probe's key lives (each probe writes it again)."""


def _bytes(v: Any) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()


def _str(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _px(ttl: float | None) -> int | None:
    return None if ttl is None else max(1, math.ceil(ttl * 1000))


def _where_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return f"unix:{parts.path}"
    try:
        port = parts.port or 6379
    except ValueError:
        port = 6379
    return f"{parts.hostname or 'localhost'}:{port}"


def _where_client(client: Any) -> str:
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", None) or {}
    if "path" in kwargs:
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"


class RedisStorage:
    """A :class:`~mcpcore.storage.base.StorageProvider` in Redis, shared by every process and replica.

    Ownership: built from ``url``, the storage creates its own connection pool and :meth:`close`
    closes it (the app's lifespan calls ``close``). Given a ``client``, the storage only borrows it:
    :meth:`close` leaves it open and its owner closes it. A passed-in client should keep
    ``decode_responses=False`` (the default); ``True`` works but costs a re-encode per value.

    Every Redis failure surfaces as :class:`~mcpcore.errors.McpError`: an unreachable, loading,
    read-only or full server as ``ServiceUnavailable`` (``data.reason = "storage_unavailable"``),
    anything else Redis rejects as ``DatabaseError``.

    Args:
        url: ``redis://``, ``rediss://`` or ``unix://`` URL (``REDIS_URL``).
        client: an existing ``redis.asyncio.Redis`` (or ``RedisCluster``) to use instead.
        namespace: first part of every key, so several apps can share one database.
        socket_timeout: seconds to wait for a reply (URL-built clients only).
        connect_timeout: seconds to wait for a connection (URL-built clients only).
        retries: reconnect attempts, with short jittered backoff, before an error surfaces
            (URL-built clients only).
        client_kwargs: passed to ``Redis.from_url``.
    """

    def __init__(self, url: str | None = None, client: Redis | RedisCluster | None = None,
                 namespace: str = "mcpcore", *,
                 socket_timeout: float = 5.0, connect_timeout: float = 2.0, retries: int = 2,
                 **client_kwargs: Any) -> None:
        if (url is None) == (client is None):
            raise ValueError("RedisStorage needs exactly one of url= or client=")
        if not namespace or "{" in namespace or "}" in namespace:
            raise ValueError("RedisStorage namespace must be non-empty and contain no '{' or '}'")
        self.namespace = namespace
        self._owned = client is None
        if url is not None:
            self._where = _where_url(url)
            opts: dict[str, Any] = {
                "socket_timeout": socket_timeout,
                "socket_connect_timeout": connect_timeout,
                "retry": Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries),
                "retry_on_timeout": True,
                **client_kwargs,
            }
            self._client: Any = Redis.from_url(url, **opts)
        else:
            self._where = _where_client(client)
            self._client = client
        self._getdel: bool = True
        self._probe_key = "{" + namespace + "}:ready:" + secrets.token_hex(8)
        self._take_script = self._client.register_script(_TAKE_LUA)
        self._cleanup_script = self._client.register_script(_CLEANUP_LUA)

    @classmethod
    def from_settings(cls, settings: Settings, namespace: str = "mcpcore") -> RedisStorage:
        """The storage on a client built for ``settings.redis_mode`` (standalone, cluster or
        sentinel; see :func:`mcpcore.redis_client.create_redis_client`), which it owns and closes.

        Raises:
            ConfigurationError: a variable the mode needs is missing or malformed.
        """
        client = create_redis_client(settings, needed_by="STORAGE_PROVIDER_TYPE=redis", retries=2,
                                     retry_on_timeout=True, health_check_interval=0)
        storage = cls(client=client, namespace=namespace)
        storage._owned = True
        storage._where = describe_redis(settings)
        return storage

    def __repr__(self) -> str:
        return f"RedisStorage({self._where!r}, namespace={self.namespace!r})"

    @property
    def client(self) -> Any:
        """The ``redis.asyncio`` client in use."""
        return self._client

    # -- plumbing -------------------------------------------------------------------------------

    def _base(self, tenant: str) -> str:
        t = tenant if _SAFE_TENANT.fullmatch(tenant) else "#" + sha256(tenant.encode()).hexdigest()[:40]
        return "{" + self.namespace + ":" + t + "}"

    @contextlib.contextmanager
    def _guard(self, op: str) -> Iterator[None]:
        try:
            yield
        except McpError:
            raise
        except _UNAVAILABLE as exc:
            count_redis_error(exc)
            # The detail (host, port, the driver's words) is for the operator's log, not the caller.
            detail = str(exc).split("\n", 1)[0][:200].rstrip(". ") or type(exc).__name__
            log.warning("Redis storage at %s is unavailable (%s): %s; check REDIS_URL and that the server is running",
                        self._where, op, detail)
            raise McpError(JsonRpcErrorCode.ServiceUnavailable, "The state store is unavailable; retry shortly.",
                           {"reason": "storage_unavailable"}, cause=exc) from exc
        except rex.RedisError as exc:
            count_redis_error(exc)
            detail = str(exc).split("\n", 1)[0][:200].rstrip(". ") or type(exc).__name__
            log.error("Redis storage at %s rejected %s: %s", self._where, op, detail)
            raise McpError(JsonRpcErrorCode.DatabaseError, f"The state store rejected {op}.",
                           {"reason": "storage_error"}, cause=exc) from exc

    # -- StorageProvider ------------------------------------------------------------------------

    async def get(self, tenant: str, key: str) -> bytes | None:
        """The value of ``key`` or ``None`` (``GET``)."""
        with self._guard("get"):
            raw = await self._client.get(self._base(tenant) + ":k:" + key)
        return None if raw is None else _bytes(raw)

    async def set(self, tenant: str, key: str, value: bytes, ttl: float | None = None) -> None:
        """``SET`` (with ``PX`` for a TTL) and index the key, in one MULTI."""
        base = self._base(tenant)
        with self._guard("set"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(base + ":k:" + key, value, px=_px(ttl))
                pipe.zadd(base + ":idx", {key: 0})
                await pipe.execute()

    async def delete(self, tenant: str, key: str) -> bool:
        """``DEL`` and unindex in one MULTI; ``True`` if a live value was deleted."""
        base = self._base(tenant)
        with self._guard("delete"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(base + ":k:" + key)
                pipe.zrem(base + ":idx", key)
                deleted, _ = await pipe.execute()
        return bool(deleted)

    async def take(self, tenant: str, key: str) -> bytes | None:
        """Atomically read and delete ``key`` (``GETDEL``, or a Lua GET+DEL before Redis 6.2):
        of any number of concurrent callers on any number of hosts, exactly one gets the value."""
        base = self._base(tenant)
        vkey, idx = base + ":k:" + key, base + ":idx"
        with self._guard("take"):
            if self._getdel:
                try:
                    async with self._client.pipeline(transaction=True) as pipe:
                        pipe.getdel(vkey)
                        pipe.zrem(idx, key)
                        raw, _ = await pipe.execute()
                    return None if raw is None else _bytes(raw)
                except rex.ResponseError as exc:
                    if "getdel" not in str(exc).lower() and "unknown command" not in str(exc).lower():
                        raise
                    self._getdel = False  # the MULTI was aborted as a whole; nothing ran
            raw = await self._take_script(keys=[vkey, idx], args=[key])
        return None if raw is None else _bytes(raw)

    async def get_many(self, tenant: str, keys: Sequence[str]) -> dict[str, bytes]:
        """The values of ``keys`` that exist (``MGET``)."""
        if not keys:
            return {}
        base = self._base(tenant) + ":k:"
        with self._guard("get_many"):
            raws = await self._client.mget([base + k for k in keys])
        return {k: _bytes(v) for k, v in zip(keys, raws, strict=True) if v is not None}

    async def set_many(self, tenant: str, items: Mapping[str, bytes], ttl: float | None = None) -> None:
        """Write every item and index them in one MULTI (atomic as a batch)."""
        if not items:
            return
        base = self._base(tenant)
        px = _px(ttl)
        with self._guard("set_many"):
            async with self._client.pipeline(transaction=True) as pipe:
                for k, v in items.items():
                    pipe.set(base + ":k:" + k, v, px=px)
                pipe.zadd(base + ":idx", dict.fromkeys(items, 0))
                await pipe.execute()

    async def delete_many(self, tenant: str, keys: Sequence[str]) -> int:
        """``DEL`` and unindex ``keys`` in one MULTI; the number of live values deleted."""
        unique = list(dict.fromkeys(keys))
        if not unique:
            return 0
        base = self._base(tenant)
        with self._guard("delete_many"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(*[base + ":k:" + k for k in unique])
                pipe.zrem(base + ":idx", *unique)
                deleted, _ = await pipe.execute()
        return int(deleted)

    async def list(self, tenant: str, prefix: str, after: str | None, limit: int) -> ListPage:
        """Up to ``limit`` live ``(key, value)`` pairs under ``prefix`` after ``after``, in key order
        (``ZRANGEBYLEX`` on the index, then ``MGET``); stale index members are dropped on the way."""
        base = self._base(tenant)
        idx = base + ":idx"
        lo = b"[" + prefix.encode() if prefix else b"-"
        if after is not None and after >= prefix:
            lo = b"(" + after.encode()
        hi = b"[" + prefix.encode() + b"\xff" if prefix else b"+"
        found: list[tuple[str, bytes]] = []
        with self._guard("list"):
            while len(found) <= limit:
                want = limit + 1 - len(found)
                members = await self._client.zrangebylex(idx, lo, hi, start=0, num=want)
                if not members:
                    break
                names = [_str(m) for m in members]
                vkeys = [base + ":k:" + n for n in names]
                values = await self._client.mget(vkeys)
                dead: list[str] = []
                dead_keys: list[str] = []
                for name, vkey, value in zip(names, vkeys, values, strict=True):
                    if value is None:
                        dead.append(name)
                        dead_keys.append(vkey)
                    else:
                        found.append((name, _bytes(value)))
                if dead:
                    await self._cleanup_script(keys=[idx, *dead_keys], args=dead)
                if len(members) < want:
                    break
                lo = b"(" + _bytes(members[-1])
        return found[:limit], len(found) > limit

    async def clear(self, tenant: str) -> int:
        """Delete every key of ``tenant`` (walking its index); the number of live values deleted."""
        base = self._base(tenant)
        idx = base + ":idx"
        total = 0
        with self._guard("clear"):
            while True:
                members = await self._client.zrange(idx, 0, _BATCH - 1)
                if not members:
                    return total
                async with self._client.pipeline(transaction=True) as pipe:
                    pipe.delete(*[base + ":k:" + _str(m) for m in members])
                    pipe.zrem(idx, *members)
                    deleted, _ = await pipe.execute()
                total += int(deleted)

    async def ping(self) -> None:
        """Write this process's probe key (``{namespace}:ready:<token>``, expiring after 10 s):
        ``McpError(ServiceUnavailable)`` when the server does not answer or refuses writes (a
        demoted primary still answers ``PING``; requests need writes)."""
        with self._guard("ping"):
            await self._client.set(self._probe_key, b"1", px=PROBE_TTL_MS)

    async def close(self) -> None:
        """Close the connection pool this storage created; a passed-in client is left open."""
        if not self._owned:
            return
        closer = getattr(self._client, "aclose", None) or self._client.close
        with self._guard("close"):
            await closer()
