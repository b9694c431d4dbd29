"""What this process holds for each 2025-era session while it is used: its GET stream,
requests in flight (for cancellation) and requests sent to the client awaiting answers."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..context import CancelSignal, Inbound
from ..errors import JsonRpcErrorCode, McpError

__all__ = ["InFlight", "Live", "LiveSessions"]


@dataclass(slots=True, eq=False)
class InFlight:
    task: asyncio.Task[Any] | None
    req: Inbound
    cancelled: bool = False

    @property
    def signal(self) -> CancelSignal:
        return self.req.signal

    def cancel(self, reason: str | None) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        self.req.signal.abort(reason)
        if self.task is not None and not self.task.done():
            self.task.cancel()


@dataclass(slots=True, eq=False)
class Live:
    session_id: str
    inflight: dict[Any, InFlight] = field(default_factory=dict)
    pending: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    get_stream: Callable[[], None] | None = None
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def busy(self) -> bool:
        return bool(self.inflight or self.pending or self.get_stream)

    def close(self) -> None:
        """The session ended: cancel its work, end its stream, fail what waits on the client."""
        for f in list(self.inflight.values()):
            f.cancel("session ended")
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(McpError(JsonRpcErrorCode.InvalidRequest, "The session ended."))
        if self.get_stream is not None:
            self.get_stream()


class LiveSessions:
    """Per-process registry of :class:`Live` entries, created on first use."""

    def __init__(self) -> None:
        self._items: dict[str, Live] = {}

    def get(self, session_id: str) -> Live:
        live = self._items.get(session_id)
        if live is None:
            live = self._items[session_id] = Live(session_id)
        return live

    def peek(self, session_id: str) -> Live | None:
        return self._items.get(session_id)

    def __len__(self) -> int:
        """Sessions with something open in this process (a stream or a request in flight)."""
        return len(self._items)

    def busy_ids(self) -> list[str]:
        """The sessions with a stream open or work in flight here."""
        return [sid for sid, live in self._items.items() if live.busy]

    def is_busy(self, session_id: str) -> bool:
        live = self._items.get(session_id)
        return live is not None and live.busy

    def release(self, session_id: str) -> None:
        live = self._items.pop(session_id, None)
        if live is not None:
            live.close()

    def forget_if_idle(self, session_id: str) -> None:
        live = self._items.get(session_id)
        if live is not None and not live.busy:
            del self._items[session_id]

    def close_all(self) -> None:
        for sid in list(self._items):
            self.release(sid)
