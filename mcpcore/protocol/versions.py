"""Protocol revisions mcpcore speaks and how a request's era is named.

Legacy (handshake) revisions negotiate once through ``initialize``; the modern revision
(2026-07-28) carries its version in every request's ``_meta``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

__all__ = [
    "ERA_LEGACY",
    "ERA_MODERN",
    "LATEST_LEGACY",
    "LEGACY_VERSIONS",
    "MODERN_VERSIONS",
    "SUPPORTED_VERSIONS",
    "Era",
    "is_handshake",
    "names_modern_era",
    "negotiate",
    "supports_batches",
]

LEGACY_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
SUPPORTED_VERSIONS: tuple[str, ...] = MODERN_VERSIONS + tuple(reversed(LEGACY_VERSIONS))
"""Every revision this server serves, newest first: what ``server/discover`` and ``-32022`` list,
2025 ones included so a dual-era client knows it may fall back to ``initialize``."""
LATEST_LEGACY = LEGACY_VERSIONS[-1]

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


class Era(StrEnum):
    """Which protocol family serves a request."""

    LEGACY = "legacy"
    MODERN = "modern"


# The two eras as module constants, for the request path: on Python 3.11 every ``Era.MODERN``
# goes through ``EnumType.__getattr__`` (about 900 instructions, a tool call read it four times).
ERA_LEGACY: Final = Era.LEGACY
ERA_MODERN: Final = Era.MODERN

_LEGACY = frozenset(LEGACY_VERSIONS)


def names_modern_era(version: object) -> bool:
    """Whether an envelope's ``protocolVersion`` names the 2026-07-28 era or a later one, which a
    2025 session cannot have: anything but one of the 2025-era (handshake) revisions."""
    return type(version) is not str or version not in _LEGACY


def is_handshake(msg: dict[str, Any]) -> bool:
    """Whether a request is a 2025-era ``initialize``: that method with the handshake's
    ``protocolVersion`` in its params. It opens a 2025 session whatever else it carries (envelope
    keys left in its ``_meta``, 2026-07-28 headers); an ``initialize`` that carries only the
    2026-07-28 envelope is that revision's request for a method it removed."""
    if msg["method"] != "initialize":
        return False
    params = msg.get("params")
    return type(params) is dict and "protocolVersion" in params


def negotiate(requested: object) -> str:
    """The legacy revision to answer an ``initialize`` with: the client's when we speak it,
    else our latest (the client decides whether it can use that)."""
    if isinstance(requested, str) and requested in LEGACY_VERSIONS:
        return requested
    return LATEST_LEGACY


def supports_batches(version: str | None) -> bool:
    """Only 2025-03-26 allows JSON-RPC batches."""
    return version == "2025-03-26"
