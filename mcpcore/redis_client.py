"""The Redis client every shared part uses (sessions, event buffer, bus, ``ctx.state``), built for
the deployment's topology: ``MCP_REDIS_MODE`` = ``standalone`` (default), ``cluster`` or
``sentinel``.

* **standalone**: one server (or a proxy in front of several) at ``REDIS_URL``.
* **cluster**: ``REDIS_URL`` names any node; the client learns the slot map from it and follows
  ``MOVED``/``ASK`` redirections. Keys that a script or transaction touches together share a hash
  tag (see :mod:`mcpcore.sessions.redis`), and the bus uses sharded pub/sub.
* **sentinel**: ``MCP_REDIS_SENTINELS`` (``host:port,...``) and ``MCP_REDIS_SENTINEL_MASTER`` name
  the sentinels and the primary's service name; each new connection asks a sentinel where the
  primary is, and each client follows the sentinels' failover announcements to move its open
  connections at once (see :mod:`mcpcore.redis_sentinel`).
  ``REDIS_URL``, when set, gives the primary's credentials, database and TLS (``rediss://``);
  its host and port are not used. ``MCP_REDIS_SENTINEL_PASSWORD`` authenticates to the sentinels.

While the store cannot answer (down, a failover under way, a cluster slot without a primary),
operations raise one of :data:`UNAVAILABLE`; callers turn that into a 503 and the next request,
once the topology has settled, just works: nothing needs a restart.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from .config import Settings
from .errors import ConfigurationError, JsonRpcErrorCode, McpError
from .metrics import count_redis_error

__all__ = ["UNAVAILABLE", "cluster_unreachable", "create_redis_client", "describe_redis", "guarded", "is_cluster",
           "redis_unavailable"]

T = TypeVar("T")

try:
    from redis import exceptions as _rex

    UNAVAILABLE: tuple[type[BaseException], ...] = (
        _rex.ConnectionError, _rex.TimeoutError, TimeoutError, OSError, _rex.ReadOnlyError,
        _rex.ClusterDownError, _rex.TryAgainError, _rex.ClusterError, _rex.SlotNotCoveredError,
        _rex.OutOfMemoryError,
    )
    """Errors that mean "the store is unreachable or switching primaries": answered 503 and retried
    by the client (a ``READONLY`` reply means the primary was just demoted)."""
    _CLUSTER_EXC: type[BaseException] = _rex.RedisClusterException
except ImportError:  # pragma: no cover - the redis extra is not installed
    UNAVAILABLE = (TimeoutError, OSError)
    _CLUSTER_EXC = OSError

_CONNECT_TIMEOUT = 2.0
_SOCKET_TIMEOUT = 5.0


def cluster_unreachable(exc: BaseException) -> bool:
    """True for the error a cluster client raises when no startup node answers."""
    return isinstance(exc, _CLUSTER_EXC) and "cannot be connected" in str(exc)


def redis_unavailable(exc: BaseException) -> McpError:
    """The 503 answer while the shared store cannot be reached (counted in the metrics)."""
    count_redis_error(exc)
    return McpError(JsonRpcErrorCode.ServiceUnavailable,
                    "The session store (Redis) is unreachable; retry shortly.", {"reason": "store_unavailable"})


async def guarded(op: Awaitable[T]) -> T:
    """Run a Redis operation; failures of :data:`UNAVAILABLE` become ``McpError(ServiceUnavailable)``."""
    try:
        return await op
    except UNAVAILABLE as exc:
        raise redis_unavailable(exc) from exc
    except Exception as exc:
        if cluster_unreachable(exc):
            raise redis_unavailable(exc) from exc
        raise


def is_cluster(client: Any) -> bool:
    """Whether ``client`` is a ``redis.asyncio.cluster.RedisCluster`` (keys must share slots, the
    bus uses sharded pub/sub)."""
    try:
        from redis.asyncio.cluster import RedisCluster
    except ImportError:  # pragma: no cover
        return False
    return isinstance(client, RedisCluster)


def describe_redis(settings: Settings) -> str:
    """Where the store is, for messages (no credentials)."""
    if settings.redis_mode == "sentinel":
        return f"sentinel master {settings.redis_sentinel_master!r} via {','.join(settings.redis_sentinels)}"
    from urllib.parse import urlsplit

    parts = urlsplit(settings.redis_url or "")
    where = f"unix:{parts.path}" if parts.scheme == "unix" else f"{parts.hostname or 'localhost'}:{_port(parts)}"
    return f"cluster via {where}" if settings.redis_mode == "cluster" else where


def _port(parts: Any) -> int:
    try:
        return int(parts.port or 6379)
    except ValueError:
        return 6379


def _check(settings: Settings, needed_by: str) -> None:
    mode = settings.redis_mode
    url = (settings.redis_url or "").strip()
    if mode == "sentinel":
        if not settings.redis_sentinels:
            raise ConfigurationError(f"{needed_by} with MCP_REDIS_MODE=sentinel needs MCP_REDIS_SENTINELS "
                                     "(comma-separated host:port of the sentinels)")
        if not settings.redis_sentinel_master:
            raise ConfigurationError(f"{needed_by} with MCP_REDIS_MODE=sentinel needs MCP_REDIS_SENTINEL_MASTER "
                                     "(the primary's service name in the sentinels' configuration)")
        if url and not url.startswith(("redis://", "rediss://")):
            raise ConfigurationError(f"REDIS_URL must start with redis:// or rediss:// with MCP_REDIS_MODE=sentinel, "
                                     f"got {_scheme(url)}")
        return
    if not url:
        raise ConfigurationError(f"{needed_by} needs REDIS_URL (e.g. redis://127.0.0.1:6379/0)")
    schemes: tuple[str, ...] = ("redis://", "rediss://") if mode == "cluster" else ("redis://", "rediss://", "unix://")
    if not url.startswith(schemes):
        raise ConfigurationError(f"REDIS_URL must start with {', '.join(schemes)}"
                                 f"{' with MCP_REDIS_MODE=cluster' if mode == 'cluster' else ''}; got {_scheme(url)}")


def _scheme(url: str) -> str:
    """What an error may quote of a URL: its scheme alone (the rest may hold a password)."""
    scheme = url.split("://", 1)[0][:20] if "://" in url else ""
    return f"{scheme!r} (the rest of the URL is not shown: it may hold a password)" if scheme else \
        "a URL without a scheme (not shown: it may hold a password)"


def create_redis_client(settings: Settings, *, needed_by: str = "MCP_SESSION_STORE=redis", retries: int = 1,
                        retry_on_timeout: bool = False, health_check_interval: int = 15) -> Any:
    """A lazily connecting ``redis.asyncio`` client for ``settings.redis_mode``; the caller owns
    it and closes it with ``await client.aclose()``.

    Connection failures are retried ``retries`` times with a short jittered backoff (a pooled
    connection that a failover closed is replaced at once), then surface as one of
    :data:`UNAVAILABLE`.

    Raises:
        ConfigurationError: a variable the mode needs is missing or malformed (the message names
            it), or the ``redis`` package is not installed.
    """
    _check(settings, needed_by)
    try:
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialWithJitterBackoff
    except ImportError as exc:
        raise ConfigurationError(f"{needed_by} needs the redis package: pip install 'mcpcore[redis]'") from exc
    opts: dict[str, Any] = {
        "socket_timeout": _SOCKET_TIMEOUT, "socket_connect_timeout": _CONNECT_TIMEOUT,
        "retry": Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries),
        "retry_on_timeout": retry_on_timeout,
    }
    url = (settings.redis_url or "").strip()
    if settings.redis_mode == "cluster":
        from redis.asyncio.cluster import RedisCluster

        if not hasattr(RedisCluster, "pubsub"):  # asyncio cluster pub/sub came with redis-py 8.0
            raise ConfigurationError("MCP_REDIS_MODE=cluster needs redis-py 8.0 or later (sharded pub/sub on the "
                                     "asyncio cluster client): pip install 'redis[hiredis]>=8'")
        opts.pop("retry_on_timeout")  # the cluster client retries timeouts as connection errors
        # Slot map refreshed on every MOVED, so a resharded or failed-over slot is found at once.
        return RedisCluster.from_url(url, reinitialize_steps=1, health_check_interval=health_check_interval, **opts)
    if settings.redis_mode == "sentinel":
        from .redis_sentinel import sentinel_client

        return sentinel_client(settings, url, opts, health_check_interval)
    import redis.asyncio as redis_asyncio

    return redis_asyncio.from_url(url, health_check_interval=health_check_interval, **opts)
