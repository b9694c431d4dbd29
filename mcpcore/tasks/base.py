"""The task store Protocol: where tasks live, shared by every instance when it is Redis.

Every change that a concurrent actor could race is one atomic step of the store, guarded by
what the caller saw: a result is written only by the attempt that holds the task (``attempt``),
never over a terminal status; an answer is taken only for a question still pending; a lease is
taken over only once it lapsed. The lease is the running instance's claim on a ``working``
task; a task waiting for input (``input_required``) has no lease, since nothing runs.
"""

from __future__ import annotations

from typing import Protocol

from .record import TaskState

__all__ = ["Claim", "TaskStore"]

Claim = tuple[str, int]
"""A task whose lease this instance took over: ``(task id, new attempt number)``."""


class TaskStore(Protocol):
    """Tasks by id, each bound to its owner, expiring with its TTL."""

    shared: bool
    """Whether other instances see these tasks (their leases can lapse when one dies)."""

    async def create(self, state: TaskState, *, max_active: int, lease_ms: int) -> bool:
        """Store a new ``working`` task held by ``state.holder``; ``False`` (nothing stored)
        when its owner already has ``max_active`` unfinished tasks."""
        ...

    async def get(self, task_id: str) -> TaskState | None:
        """The task, or ``None`` when unknown or expired."""
        ...

    async def page(self, owner: str, offset: int, limit: int) -> tuple[list[TaskState], int | None]:
        """The owner's tasks from ``offset`` (oldest first), and the next offset if any."""
        ...

    async def finish(self, task_id: str, attempt: int, status: str, outcome: bytes | None,
                     message: str | None) -> bool:
        """Record the end of ``attempt``: ``completed`` (outcome: the result), ``failed`` (the
        error). ``False`` when the task ended meanwhile or another attempt holds it."""
        ...

    async def park(self, task_id: str, attempt: int, asks: dict[str, bytes], state: str | None,
                   message: str | None) -> bool:
        """``attempt`` asked the client (``asks``: wire key -> request JSON): the task waits in
        ``input_required``, without a lease. ``False`` as for :meth:`finish`."""
        ...

    async def answer(self, task_id: str, answers: dict[str, bytes], holder: str, lease_ms: int) -> int | None:
        """Take the answers to pending questions (others are ignored). When none is left
        pending, the task is ``working`` again, held by ``holder``: returns the attempt that
        ``holder`` must now run; otherwise ``None``."""
        ...

    async def cancel(self, task_id: str, message: str) -> str | None:
        """Cancel the task unless it is finished; returns its status before (``None``: unknown)."""
        ...

    async def note(self, task_id: str, attempt: int, message: str) -> None:
        """Set the ``statusMessage`` of a task ``attempt`` is running."""
        ...

    async def renew(self, held: dict[str, int], holder: str, lease_ms: int) -> set[str]:
        """Extend the leases ``holder`` holds (task id -> attempt); returns the ids it no
        longer holds (cancelled, taken over, gone)."""
        ...

    async def release(self, task_id: str, holder: str, attempt: int) -> None:
        """Let the lease lapse now (the instance is stopping): another instance takes over."""
        ...

    async def next_deadline(self) -> int | None:
        """The earliest lease deadline of any task (epoch ms), ``None`` when nothing runs."""
        ...

    async def claim_due(self, holder: str, lease_ms: int, limit: int = 100) -> list[Claim]:
        """Take over the tasks whose lease lapsed (their instance died); tidy what needs none."""
        ...

    async def sweep(self) -> None:
        """Drop what expired (a store without native expiry)."""
        ...

    async def close(self) -> None: ...
