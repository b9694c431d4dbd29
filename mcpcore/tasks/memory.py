"""Tasks in this process's memory (one instance; they end with it)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from .base import Admission, Claim, TaskBounds
from .record import TERMINAL, TaskState, now_ms

__all__ = ["MemoryTaskStore"]


class MemoryTaskStore:
    """A :class:`~mcpcore.tasks.base.TaskStore` in a dict; expired tasks are dropped on read and
    by the app's periodic sweep, so memory is bounded by the TTL and by :attr:`bounds` per
    account. Leases never lapse here: the only instance that could hold one is this one."""

    shared = False

    def __init__(self, bounds: TaskBounds | None = None) -> None:
        self.bounds = bounds or TaskBounds()
        self._tasks: dict[str, TaskState] = {}
        self._kept: dict[str, OrderedDict[str, None]] = {}  # account -> its tasks, oldest first
        self._active: dict[str, set[str]] = {}  # account -> its unfinished tasks (the cap counts these)
        self._bytes: dict[str, int] = {}  # account -> bytes of its tasks
        self._meta_size: dict[str, int] = {}  # task -> bytes of its meta

    def _live(self, task_id: str) -> TaskState | None:
        st = self._tasks.get(task_id)
        if st is not None and st.meta.expires <= now_ms():
            self._drop(st)
            return None
        return st

    def _drop(self, st: TaskState) -> None:
        account = st.meta.account
        self._tasks.pop(st.task_id, None)
        self._meta_size.pop(st.task_id, None)
        self._ended(st)
        self._resize(st, 0)
        kept = self._kept.get(account)
        if kept is not None:
            kept.pop(st.task_id, None)
            if not kept:
                del self._kept[account]
                self._bytes.pop(account, None)

    def _ended(self, st: TaskState) -> None:
        active = self._active.get(st.meta.account)
        if active is not None:
            active.discard(st.task_id)
            if not active:
                del self._active[st.meta.account]

    def _resize(self, st: TaskState, size: int) -> None:
        """``st`` now takes ``size`` bytes: its account's total follows."""
        account = st.meta.account
        self._bytes[account] = self._bytes.get(account, 0) + size - st.size
        st.size = size

    def _full(self, account: str, count: int, size: int) -> bool:
        return len(self._kept.get(account, ())) >= count or self._bytes.get(account, 0) + size > self.bounds.bytes

    def _make_room(self, account: str, count: int, size: int, keep: str | None = None) -> None:
        """Forget ``account``'s soonest-expiring finished tasks (never ``keep``) until it holds
        fewer than ``count`` tasks and ``size`` more bytes fit."""
        if not self._full(account, count, size):
            return
        done = [st for tid in self._kept.get(account, ()) if tid != keep and (st := self._tasks[tid]).terminal]
        for st in sorted(done, key=lambda st: st.meta.expires):
            self._drop(st)
            if not self._full(account, count, size):
                return

    async def create(self, state: TaskState, *, lease_ms: int) -> Admission:
        account = state.meta.account
        size = len(state.meta.to_json())
        if self._full(account, self.bounds.kept, size) or len(self._active.get(account, ())) >= self.bounds.active:
            for tid in list(self._kept.get(account, ())):  # drop the expired before counting
                self._live(tid)
        active = self._active.get(account, ())
        if len(active) >= self.bounds.active:
            return "too_many"
        if sum(self._tasks[tid].size for tid in active) + size > self.bounds.bytes:
            return "too_large"
        self._make_room(account, self.bounds.kept, size)
        st = state.snapshot()
        st.asks, st.answers = dict(st.asks), dict(st.answers)
        st.updated = st.updated or st.meta.created
        st.deadline = now_ms() + lease_ms
        st.size = 0
        self._tasks[st.task_id] = st
        self._meta_size[st.task_id] = size
        self._kept.setdefault(account, OrderedDict())[st.task_id] = None
        self._active.setdefault(account, set()).add(st.task_id)
        self._resize(st, size)
        return "created"

    async def get(self, task_id: str) -> TaskState | None:
        st = self._live(task_id)
        return st.snapshot() if st is not None else None

    async def page(self, owner: str, offset: int, limit: int) -> tuple[list[TaskState], int | None]:
        ids = list(self._kept.get(owner, ()))
        live = [st for tid in ids if (st := self._live(tid)) is not None and st.meta.owner == owner]
        page = [st.snapshot() for st in live[offset:offset + limit]]
        return page, offset + limit if offset + limit < len(live) else None

    def _held(self, task_id: str, attempt: int) -> TaskState | None:
        st = self._live(task_id)
        if st is None or st.status in TERMINAL or st.attempt != attempt:
            return None
        return st

    async def finish(self, task_id: str, attempt: int, status: str, outcome: bytes | None,
                     message: str | None) -> bool:
        st = self._held(task_id, attempt)
        if st is None:
            return False
        st.status, st.outcome, st.message, st.updated = status, outcome, message, now_ms()
        st.asks, st.answers, st.state, st.holder, st.deadline = {}, {}, None, None, None
        self._ended(st)
        self._resize(st, self._meta_size[task_id] + len(outcome or b""))
        self._make_room(st.meta.account, self.bounds.kept + 1, 0, keep=task_id)
        return True

    async def park(self, task_id: str, attempt: int, asks: dict[str, bytes], state: str | None,
                   message: str | None) -> bool:
        st = self._held(task_id, attempt)
        if st is None or st.status != "working":
            return False
        st.status, st.asks, st.answers, st.state = "input_required", dict(asks), {}, state
        st.message, st.updated, st.round, st.holder, st.deadline = message, now_ms(), st.round + 1, None, None
        return True

    async def answer(self, task_id: str, answers: dict[str, bytes], holder: str, lease_ms: int) -> int | None:
        st = self._live(task_id)
        if st is None or st.status != "input_required":
            return None
        for key, value in answers.items():
            if key in st.asks:
                st.answers[key] = value
                del st.asks[key]
        if st.asks:
            return None
        st.status, st.updated, st.attempt = "working", now_ms(), st.attempt + 1
        st.holder, st.deadline = holder, now_ms() + lease_ms
        return st.attempt

    async def cancel(self, task_id: str, message: str) -> str | None:
        st = self._live(task_id)
        if st is None:
            return None
        before = st.status
        if before not in TERMINAL:
            st.status, st.message, st.updated = "cancelled", message, now_ms()
            st.asks, st.answers, st.state, st.holder, st.deadline = {}, {}, None, None, None
            self._ended(st)
        return before

    async def note(self, task_id: str, attempt: int, message: str) -> None:
        st = self._held(task_id, attempt)
        if st is not None and st.status == "working":
            st.message, st.updated = message, now_ms()

    async def renew(self, held: Mapping[str, int], holder: str, lease_ms: int) -> set[str]:
        lost = set()
        until = now_ms() + lease_ms
        for task_id, attempt in held.items():
            st = self._held(task_id, attempt)
            if st is None or st.status != "working" or st.holder != holder:
                lost.add(task_id)
            else:
                st.deadline = until
        return lost

    async def release(self, task_id: str, holder: str, attempt: int) -> None:
        return None

    async def next_due_in(self) -> int | None:
        return None

    async def claim_due(self, holder: str, lease_ms: int, running: Mapping[str, int],
                        limit: int = 100) -> list[Claim]:
        return []

    async def sweep(self) -> None:
        now = now_ms()
        for st in [st for st in self._tasks.values() if st.meta.expires <= now]:
            self._drop(st)

    async def close(self) -> None:
        self._tasks.clear()
        self._kept.clear()
        self._active.clear()
        self._bytes.clear()
        self._meta_size.clear()

    def __len__(self) -> int:
        return len(self._tasks)
