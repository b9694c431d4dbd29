"""``ctx.signal``: a cancellation token that fires when the client cancels or the stream closes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["CancelSignal"]


class CancelSignal:
    """Check ``.aborted`` between steps or ``await .wait()``; the handler's task is also cancelled."""

    __slots__ = ("_callbacks", "_event", "aborted", "reason")

    def __init__(self) -> None:
        self.aborted = False
        self.reason: str | None = None
        self._event: asyncio.Event | None = None
        self._callbacks: list[Callable[[], None]] | None = None

    def abort(self, reason: str | None = None) -> None:
        """Fire the signal (idempotent)."""
        if self.aborted:
            return
        self.aborted = True
        self.reason = reason
        if self._event is not None:
            self._event.set()
        for cb in self._callbacks or ():
            try:
                cb()
            except Exception:  # a listener must not break cancellation
                pass

    def add_callback(self, cb: Callable[[], None]) -> None:
        """Call ``cb`` when the signal fires (at once when it already has)."""
        if self.aborted:
            cb()
            return
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(cb)

    async def wait(self) -> None:
        """Wait until the signal fires."""
        if self.aborted:
            return
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()

    def __repr__(self) -> str:
        return f"CancelSignal(aborted={self.aborted})"
