"""Finding the tasks of dead instances: a timer set for the earliest lease deadline, nothing more.

Each instance sleeps until the earliest deadline in the store's lease schedule (plus a little),
or until the bus says a lease was taken (which may be earlier), then takes over every task
whose lease lapsed. An instance whose holder renewed in time finds it held and sleeps again.
Deadlines and "now" are both read on the store's clock, so an instance whose clock runs ahead
never robs a holder that renews; and an instance never takes over an attempt it runs itself
(however late its renewal: the store was away), it renews it. With nothing running anywhere the
schedule is empty and the watcher waits on the bus alone: an idle server does no work at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from .base import Claim, TaskStore

__all__ = ["LeaseWatcher"]

log = logging.getLogger("mcpcore.tasks")

_SLACK_S = 0.05


class LeaseWatcher:
    """Takes over lapsed leases and hands each claim to ``recover``."""

    def __init__(self, store: TaskStore, holder: str, lease_ms: int,
                 recover: Callable[[Claim], Awaitable[None]], running: Callable[[], dict[str, int]]) -> None:
        self.store = store
        self.holder = holder
        self.lease_ms = lease_ms
        self.recover = recover
        self.running = running
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def started(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def nudge(self) -> None:
        """A lease was scheduled (maybe earlier than the one awaited): look again."""
        self._wake.set()

    async def _run(self) -> None:
        backoff = 0.5
        failing = False
        while True:
            try:
                self._wake.clear()
                due_in = await self.store.next_due_in()
                if failing:
                    log.warning("task lease watcher: the task store answers again")
                    failing = False
                delay = None if due_in is None else max(0.0, due_in / 1000) + _SLACK_S
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
                    continue  # woken: the schedule changed
                for claim in await self.store.claim_due(self.holder, self.lease_ms, self.running()):
                    try:
                        await self.recover(claim)
                    except Exception:
                        log.exception("could not take over task %s", claim[0][:8])
                backoff = 0.5
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is unreachable: look again a little later
                reason = str(getattr(exc, "message", exc)).rstrip(". ")
                if not failing:
                    log.warning("task lease watcher: cannot read the task store (%s); trying again every %.1f-5 s",
                                reason, backoff)
                failing = True
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
