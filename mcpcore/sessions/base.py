"""2025-era sessions: the record, the store protocol, and id rules."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["SESSION_ID_RE", "SessionRecord", "SessionStore", "is_session_id", "new_session_id"]

SESSION_ID_RE = re.compile(r"[a-f0-9]{64}")  # use fullmatch
_HEX_TO_ZERO = bytes(0x30 if chr(i) in "0123456789abcdef" else 0x78 for i in range(256))
"""Every lowercase hex digit to ``0``, any other byte to ``x``."""
_ZEROS = b"0" * 64


def is_session_id(value: str) -> bool:
    """Whether ``value`` has the form :func:`new_session_id` gives (64 lowercase hex digits),
    as ``SESSION_ID_RE`` defines it; checked on every 2025-era request, so without the regex
    engine (a third of the cost) and by a translation table made once (a deletion's table is
    built on every call)."""
    return len(value) == 64 and value.isascii() and value.encode().translate(_HEX_TO_ZERO) == _ZEROS


def new_session_id() -> str:
    """256 random bits, hex."""
    return secrets.token_hex(32)


@dataclass(slots=True, eq=False)
class SessionRecord:
    """What a 2025-era session remembers between requests."""

    id: str
    protocol_version: str = ""
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    subscriptions: set[str] = field(default_factory=set)
    identity: tuple[str, str, str] | None = None
    created: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.monotonic)
    matched: object = field(default=None, repr=False)
    """The caller (its immutable ``AuthInfo``) last found to be ``identity``, in this process
    only (not stored): a request of the session bringing that very object is its identity's
    without comparing again, so the binding is checked once per caller object, not per request."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "v": self.protocol_version,
            "caps": self.client_capabilities,
            "info": self.client_info,
            "log": self.log_level,
            "subs": sorted(self.subscriptions),
            "idn": list(self.identity) if self.identity else None,
            "created": self.created,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionRecord:
        idn = data.get("idn")
        return cls(
            id=data["id"],
            protocol_version=data.get("v", ""),
            client_capabilities=data.get("caps") or {},
            client_info=data.get("info"),
            log_level=data.get("log"),
            subscriptions=set(data.get("subs") or ()),
            identity=(idn[0], idn[1], idn[2]) if idn else None,
            created=data.get("created", time.time()),
        )


class SessionStore(Protocol):
    """Where sessions live. ``get`` slides the idle expiry; ``create`` refuses when full."""

    async def create(self, record: SessionRecord) -> None: ...

    async def get(self, session_id: str) -> SessionRecord | None: ...

    async def save(self, record: SessionRecord) -> None: ...

    async def delete(self, session_id: str) -> bool: ...

    async def count(self) -> int: ...

    async def sweep(self) -> int: ...

    async def close(self) -> None: ...
