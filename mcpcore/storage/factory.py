"""Build the ``ctx.state`` provider that :class:`~mcpcore.config.Settings` selects."""

from __future__ import annotations

from ..config import Settings
from ..store_kinds import store_kind
from .base import StorageProvider

__all__ = ["create_provider"]


def create_provider(settings: Settings) -> StorageProvider:
    """The provider of the store kind ``STORAGE_PROVIDER_TYPE`` names (``memory``, ``filesystem``,
    ``redis`` or one registered with :func:`~mcpcore.store_kinds.register_store_kind`).

    The caller owns the result and must ``await provider.close()`` at shutdown (``McpApp`` does so
    in its lifespan); for Redis that closes the client built for ``MCP_REDIS_MODE`` from ``REDIS_URL`` (or the
    sentinels).

    Raises:
        ConfigurationError: no kind of that name builds ``ctx.state``, a required variable is
            missing or the ``redis`` package is not installed; the message names the variable or
            the extra to install.
    """
    build = store_kind("state", settings.storage_provider).state
    assert build is not None  # store_kind checked it
    return build(settings)
