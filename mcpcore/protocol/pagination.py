"""Opaque offset cursors for the list methods."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, TypeVar

from ..errors import JsonRpcErrorCode, McpError

__all__ = ["page"]

T = TypeVar("T")


def _encode(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def _decode(cursor: object) -> int:
    bad = McpError(JsonRpcErrorCode.InvalidParams, "Invalid cursor.", {"reason": "invalid_cursor"})
    if not isinstance(cursor, str) or len(cursor) > 64:
        raise bad
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        raise bad from None
    if not text.startswith("o:") or not text[2:].isdigit():
        raise bad
    return int(text[2:])


def page(items: Sequence[T], cursor: Any, size: int) -> tuple[Sequence[T], str | None]:
    """One page of ``items`` from ``cursor`` and the cursor of the next page, if any."""
    start = 0 if cursor is None else _decode(cursor)
    if start > len(items):
        raise McpError(JsonRpcErrorCode.InvalidParams, "Invalid cursor.", {"reason": "invalid_cursor"})
    end = start + size
    return items[start:end], (_encode(end) if end < len(items) else None)
