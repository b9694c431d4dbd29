"""``ctx.state`` storage: the provider protocol, the shared rules, the providers, and the
registry of store kinds the settings name (:func:`register_store_kind` adds yours).

:class:`RedisStorage` is imported on first use, so ``redis`` stays an optional dependency
(``pip install 'mcpcore[redis]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..store_kinds import SessionParts, StoreKind, register_store_kind
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
    "SessionParts",
    "StateService",
    "StorageProvider",
    "StoreKind",
    "create_provider",
    "register_store_kind",
]


def __getattr__(name: str) -> Any:
    if name == "RedisStorage":
        from .redis import RedisStorage
        return RedisStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
