"""mcpcore's own store kinds, each registered once (:mod:`mcpcore.store_kinds`): ``memory``
(this process), ``redis`` (every instance, through the app's Redis client) and ``filesystem``
(``ctx.state`` only)."""

from __future__ import annotations

from collections.abc import Callable

from .bus.memory import LocalBus
from .config import Settings
from .errors import ConfigurationError
from .sessions.events import MemoryEventBuffer
from .sessions.memory import MemorySessionStore
from .sessions.streams import MemoryStreamSlots
from .storage.base import StorageProvider
from .storage.filesystem import FileStorage
from .storage.memory import MemoryStorage
from .store_kinds import SessionParts, StoreKind, register_store_kind
from .tasks.base import TaskBounds
from .tasks.memory import MemoryTaskStore

__all__ = ["FILESYSTEM", "MEMORY", "REDIS", "sweep_period"]


def sweep_period(settings: Settings) -> float:
    """Seconds between two sweeps of the session side (expiry, leases): a third of the idle
    timeout, between 1 and 60."""
    return max(1.0, min(60.0, settings.session_idle_ms / 3000))


def _memory_sessions(s: Settings, is_busy: Callable[[str], bool]) -> SessionParts:
    return SessionParts(
        sessions=MemorySessionStore(idle_ms=s.session_idle_ms, max_sessions=s.max_sessions,
                                    max_per_identity=s.max_sessions_per_identity, is_busy=is_busy),
        events=MemoryEventBuffer(s.resumability_max_events, s.resumability_ttl_ms, max_bytes=s.resumability_max_bytes,
                                 max_total_bytes=s.resumability_max_total_bytes) if s.resumability else None,
        bus=LocalBus(), stream_slots=MemoryStreamSlots(s.max_streams_per_session),
        tasks=MemoryTaskStore(TaskBounds.from_settings(s)))


def _redis_sessions(s: Settings, is_busy: Callable[[str], bool]) -> SessionParts:
    from .bus.redis import RedisBus  # these import redis: only when the stores live there
    from .redis_client import create_redis_client
    from .sessions.redis import RedisSessionStore
    from .sessions.redis_events import RedisEventBuffer
    from .sessions.streams import RedisStreamSlots
    from .tasks.redis import RedisTaskStore

    redis = create_redis_client(s)
    return SessionParts(
        sessions=RedisSessionStore(redis, idle_ms=s.session_idle_ms, max_sessions=s.max_sessions,
                                   max_per_identity=s.max_sessions_per_identity),
        events=RedisEventBuffer(redis, max_events=s.resumability_max_events, ttl_ms=s.resumability_ttl_ms,
                                max_bytes=s.resumability_max_bytes) if s.resumability else None,
        bus=RedisBus(redis),
        stream_slots=RedisStreamSlots(redis, s.max_streams_per_session,
                                      lease_ms=int(3000 * max(10.0, sweep_period(s)))),
        tasks=RedisTaskStore(redis, bounds=TaskBounds.from_settings(s)), redis=redis)


def _redis_state(settings: Settings) -> StorageProvider:
    try:
        from .storage.redis import RedisStorage
    except ImportError as exc:
        raise ConfigurationError("STORAGE_PROVIDER_TYPE=redis needs the redis package: "
                                 "pip install 'mcpcore[redis]'") from exc
    return RedisStorage.from_settings(settings)


def _filesystem_state(settings: Settings) -> StorageProvider:
    path = (settings.storage_path or "").strip()
    if not path:
        raise ConfigurationError("STORAGE_PROVIDER_TYPE=filesystem requires STORAGE_FILESYSTEM_PATH "
                                 "(a folder for the state files)")
    return FileStorage(path)


MEMORY = register_store_kind(StoreKind(
    "memory", aliases=("in-memory", "mem"), sessions=_memory_sessions,
    state=lambda settings: MemoryStorage(max_entries=settings.storage_max_entries)))
REDIS = register_store_kind(StoreKind("redis", state=_redis_state, sessions=_redis_sessions, shared=True, redis=True))
FILESYSTEM = register_store_kind(StoreKind("filesystem", aliases=("fs",), state=_filesystem_state))
