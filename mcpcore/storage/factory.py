"""Build the ``ctx.state`` provider that :class:`~mcpcore.config.Settings` selects."""

from __future__ import annotations

from ..config import Settings
from ..errors import ConfigurationError
from .base import StorageProvider

__all__ = ["create_provider"]


def create_provider(settings: Settings) -> StorageProvider:
    """The provider named by ``STORAGE_PROVIDER_TYPE`` (``in-memory``, ``filesystem`` or ``redis``).

    The caller owns the result and must ``await provider.close()`` at shutdown (``McpApp`` does so
    in its lifespan); for Redis that closes the client built for ``MCP_REDIS_MODE`` from ``REDIS_URL`` (or the
    sentinels).

    Raises:
        ConfigurationError: a required variable is missing or the ``redis`` package is not
            installed; the message names the variable or the extra to install.
    """
    kind = settings.storage_provider
    if kind == "in-memory":
        from .memory import MemoryStorage
        return MemoryStorage(max_entries=settings.storage_max_entries)
    if kind == "filesystem":
        path = (settings.storage_path or "").strip()
        if not path:
            raise ConfigurationError("STORAGE_PROVIDER_TYPE=filesystem requires STORAGE_FILESYSTEM_PATH "
                                     "(a folder for the state files)")
        from .filesystem import FileStorage
        return FileStorage(path)
    if kind == "redis":
        try:
            from .redis import RedisStorage
        except ImportError as exc:
            raise ConfigurationError("STORAGE_PROVIDER_TYPE=redis needs the redis package: "
                                     "pip install 'mcpcore[redis]'") from exc
        return RedisStorage.from_settings(settings)
    raise ConfigurationError(f"STORAGE_PROVIDER_TYPE must be one of in-memory, filesystem, redis; got {kind!r}")
