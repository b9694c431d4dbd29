"""Reading server-sent events, and header values as the 2026-07-28 HTTP transport encodes them."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["header_value", "parse_sse"]


async def parse_sse(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """Yield ``{"event", "id", "data", "retry"}`` for each SSE event (comments skipped)."""
    ev: dict[str, Any] = {}
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data or ev:
                ev["data"] = "\n".join(data)
                yield ev
            ev, data = {}, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field in ("event", "id", "retry"):
            ev[field] = value
    if data:
        ev["data"] = "\n".join(data)
        yield ev


def header_value(text: str) -> str:
    """``text`` as an ``Mcp-Name``/``Mcp-Param-*`` header carries it: as is when it is printable
    ASCII without surrounding spaces, else ``=?base64?...?=``."""
    if text.isascii() and text.isprintable() and text == text.strip() and not text.startswith("=?"):
        return text
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="
