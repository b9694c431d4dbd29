"""2025-era sessions and their stores."""

from .base import SessionRecord, SessionStore, new_session_id
from .memory import MemorySessionStore, SessionCapacityError

__all__ = ["MemorySessionStore", "SessionCapacityError", "SessionRecord", "SessionStore", "new_session_id"]
