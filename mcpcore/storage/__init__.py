"""``ctx.state`` storage: the provider protocol, the shared rules, and the providers."""

from .base import StorageProvider
from .memory import MemoryStorage
from .service import CursorSigner, StateService

__all__ = ["CursorSigner", "MemoryStorage", "StateService", "StorageProvider"]
