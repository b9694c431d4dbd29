"""The task store Protocol: where tasks live, shared by every instance when it is Redis.

Every change that a concurrent actor could race is one atomic step of the store, guarded by
what the caller saw: a result is written only by the attempt that holds the task (``attempt``),
never over a terminal status; an answer is taken only for a question still pending; a lease is
taken over only once it lapsed. The lease is the running instance's claim on a ``working``
task; a task waiting for input (``input_required``) has no lease, since nothing runs.

Lease deadlines are times on the store's own clock (Redis ``TIME``), never an instance's: two
instances whose clocks disagree still agree on whether a lease lapsed.

What each account keeps is bounded (:class:`TaskBounds`): its unfinished tasks in count, and
all its tasks, finished ones included, in count and bytes. Making room forgets the account's
finished tasks that would expire first; when unfinished tasks alone fill it, a new one is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from .record import TaskState

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["Admission", "Claim", "TaskBounds", "TaskStore"]

Claim = tuple[str, int]
"""A task whose lease this instance took over: ``(task id, new attempt number)``."""

Admission = Literal["created", "too_many", "too_large"]
"""How :meth:`TaskStore.create` ended: stored; refused because the account has its maximum of
unfinished tasks; refused because its unfinished tasks leave no room for this one's bytes."""


@dataclass(frozen=True, slots=True)
class TaskBounds:
    """What one account (a caller's identity, see :func:`~mcpcore.tasks.record.quota_of`) keeps."""

    active: int = 100
    """Unfinished tasks (``MCP_TASKS_MAX_PER_IDENTITY``)."""
    kept: int = 1000
    """Tasks, finished ones included (``MCP_TASKS_MAX_KEPT_PER_IDENTITY``)."""
    bytes: int = 32 * 2**20
    """Bytes of those tasks: arguments and request, result or error, questions and answers
    (``MCP_TASKS_MAX_BYTES_PER_IDENTITY``)."""

    @classmethod
    def from_settings(cls, s: Settings) -> TaskBounds:
        return cls(active=s.tasks_max_per_identity, kept=s.tasks_max_kept_per_identity,
                   bytes=s.tasks_max_bytes_per_identity)


class TaskStore(Protocol):
    """Tasks by id, each bound to its owner, expiring with its TTL."""

    shared: bool
    """Whether other instances see these tasks (their leases can lapse when one dies)."""

    bounds: TaskBounds
    """What each account may keep."""

    async def create(self, state: TaskState, *, lease_ms: int) -> Admission:
        """Store a new ``working`` task held by ``state.holder``, counted against
        ``state.meta.account``, forgetting that account's soonest-expiring finished tasks when
        it needs the room; nothing is stored unless ``"created"``."""
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
        error). ``False`` when the task ended meanwhile or another attempt holds it. The outcome's
        bytes count against the task's account (its oldest finished tasks make room)."""
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

    async def renew(self, held: Mapping[str, int], holder: str, lease_ms: int) -> set[str]:
        """Extend the leases ``holder`` holds (task id -> attempt), lapsed or not, unless another
        instance took one over; returns the ids it no longer holds (cancelled, taken over, gone)."""
        ...

    async def release(self, task_id: str, holder: str, attempt: int) -> None:
        """Let the lease lapse now (the instance is stopping): another instance takes over."""
        ...

    async def next_due_in(self) -> int | None:
        """Milliseconds until the earliest lease deadline of any task, by the store's clock
        (``<= 0``: one is due now); ``None`` when nothing runs."""
        ...

    async def claim_due(self, holder: str, lease_ms: int, running: Mapping[str, int],
                        limit: int = 100) -> list[Claim]:
        """Take over the tasks whose lease lapsed (their instance died); tidy what needs none.
        ``running`` (task id -> attempt) is what ``holder`` runs itself: those leases are
        renewed, never taken over, however late their renewal is."""
        ...

    async def sweep(self) -> None:
        """Drop what expired (a store without native expiry)."""
        ...

    async def close(self) -> None: ...
