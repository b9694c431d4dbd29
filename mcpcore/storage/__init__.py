"""``ctx.state`` storage: the provider protocol, the shared rules, and the providers.

:class:`RedisStorage` is imported on first use, so ``redis`` stays an optional dependency
(``pip install 'mcpcore[redis]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import StorageProvider
from .factory import create_provider
from .filesystem import FileStorage
from .memory import MemoryStorage
from .service import CursorSigner, StateService

if TYPE_CHECKING:
    from .redis import RedisStorage

__all__ = [
    "CursorSigner",
    "FileStorage",
    "MemoryStorage",
    "RedisStorage",
    "StateService",
    "StorageProvider",
    "create_provider",
]


def __getattr__(name: str) -> Any:
    if name == "RedisStorage":
        from .redis import RedisStorage
        return RedisStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
