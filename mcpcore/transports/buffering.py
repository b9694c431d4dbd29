"""The event buffer layer: each SSE event of a resumable 2025-era session is stored before it
is sent, so a client that lost its stream resumes it with ``Last-Event-ID`` on any instance."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from ..config import Settings
from ..layer import Layer, qualified
from ..sessions.base import SessionRecord
from ..sessions.events import EventBuffer
from .exchange import StreamSink

__all__ = ["EventBuffering"]


class EventBuffering(Layer):
    """Where a session's streams are buffered (``None`` buffer: ``MCP_HTTP_RESUMABILITY=false``,
    nothing is resumable)."""

    title = "event buffer"

    def __init__(self, events: EventBuffer | None, settings: Settings) -> None:
        self.events = events
        self.retry_ms = settings.sse_retry_ms

    def where(self) -> str:
        return qualified(self.events) if self.events is not None else "off"

    @property
    def resumable(self) -> bool:
        return self.events is not None

    def sink_for(self, record: SessionRecord, stream_id: str | None = None) -> StreamSink | None:
        """Where a stream of ``record`` is buffered (``None``: not resumable)."""
        if self.events is None:
            return None
        return StreamSink(self.events, record.id, stream_id, prime=record.protocol_version >= "2025-11-25",
                          retry_ms=self.retry_ms)

    def follow(self, session_id: str, stream_id: str, after: str | None) -> AsyncGenerator[tuple[str, bytes], None]:
        """A stream's events after ``after``, then new ones until it ends."""
        assert self.events is not None
        return self.events.follow(session_id, stream_id, after)

    async def release(self, session_id: str) -> None:
        """Forget every stream of a session that ended."""
        if self.events is not None:
            await self.events.release(session_id)
