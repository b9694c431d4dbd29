"""``ctx.enrich`` and ``ctx.content``: what rides alongside a tool's domain result."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from ..content import AudioContent, ImageContent, to_wire

__all__ = ["ContentCollect", "Enrich"]


class Enrich:
    """Accumulates success-path context (notices, totals, the parsed query) onto the result.

    Call it with fields (``ctx.enrich(total_pages=3)``) or use the kind-tagged helpers. Fields are
    merged into ``structuredContent`` (validated against the definition's ``enrichment`` model)
    and rendered as a ``content[]`` trailer. On a tool without an ``enrichment`` model, a no-op.
    """

    __slots__ = ("fields", "kinds")

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}

    def __call__(self, fields: Mapping[str, Any] | None = None, /, **more: Any) -> None:
        if fields:
            self.fields.update(fields)
        if more:
            self.fields.update(more)

    def notice(self, text: str) -> None:
        """Guidance for the model (``notice``; rendered as a block quote)."""
        self.fields["notice"] = text
        self.kinds["notice"] = "notice"

    def total(self, count: int) -> None:
        """The total before any limit (``totalCount``; rendered ``N total``)."""
        self.fields["totalCount"] = count
        self.kinds["totalCount"] = "total"

    def echo(self, query: str) -> None:
        """The query as the server parsed it (``effectiveQuery``; rendered ``Query: ...``)."""
        self.fields["effectiveQuery"] = query
        self.kinds["effectiveQuery"] = "echo"

    def delta(self, field: str, before: Any, after: Any) -> None:
        """A change the call made (``{field: {before, after}}``; rendered ``field: before -> after``)."""
        self.fields[field] = {"before": before, "after": after}
        self.kinds[field] = "delta"

    def truncated(self, shown: int, cap: int, ceiling: int | None = None, guidance: str | None = None) -> None:
        """Disclose that a list was capped: ``truncated``, ``shown``, ``cap``, ``truncationCeiling``
        and a ``notice`` (``guidance`` or a generated one; the last notice wins)."""
        self.fields.update({"truncated": True, "shown": shown, "cap": cap})
        if ceiling is not None:
            self.fields["truncationCeiling"] = ceiling
        self.notice(guidance or f"Showing {shown} results (capped at {cap}); narrow the request to see the rest.")


class ContentCollect:
    """Collects image/audio (or any) content blocks that are prepended to ``content[]``;
    never placed in ``structuredContent`` and dropped when the handler fails."""

    __slots__ = ("blocks",)

    def __init__(self) -> None:
        self.blocks: list[dict[str, Any]] = []

    def __call__(self, block: Any) -> None:
        self.blocks.append(to_wire(block))

    def image(self, data: str | bytes, mime_type: str) -> None:
        """Add a base64 image block (bytes are encoded for you)."""
        self.blocks.append(to_wire(ImageContent(data=_b64(data), mime_type=mime_type)))

    def audio(self, data: str | bytes, mime_type: str) -> None:
        """Add a base64 audio block (bytes are encoded for you)."""
        self.blocks.append(to_wire(AudioContent(data=_b64(data), mime_type=mime_type)))


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data).decode("ascii") if isinstance(data, (bytes, bytearray)) else data
