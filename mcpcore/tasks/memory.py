"""Tasks in this process's memory (one instance; they end with it)."""

from __future__ import annotations

from collections import OrderedDict

from .base import Claim
from .record import TERMINAL, TaskState, now_ms

__all__ = ["MemoryTaskStore"]


class MemoryTaskStore:
    """A :class:`~mcpcore.tasks.base.TaskStore` in a dict; expired tasks are dropped on read and
    by the app's periodic sweep, so memory is bounded by the TTL. Leases never lapse here: the
    only instance that could hold one is this one."""

    shared = False

    def __init__(self) -> None:
        self._tasks: dict[str, TaskState] = {}
        self._owners: dict[str, OrderedDict[str, None]] = {}
        self._active: dict[str, set[str]] = {}  # owner -> its unfinished tasks (the cap counts these)

    def _live(self, task_id: str) -> TaskState | None:
        st = self._tasks.get(task_id)
        if st is not None and st.meta.expires <= now_ms():
            self._drop(st)
            return None
        return st

    def _drop(self, st: TaskState) -> None:
        self._tasks.pop(st.task_id, None)
        self._ended(st)
        owned = self._owners.get(st.meta.owner)
        if owned is not None:
            owned.pop(st.task_id, None)
            if not owned:
                del self._owners[st.meta.owner]

    def _ended(self, st: TaskState) -> None:
        active = self._active.get(st.meta.owner)
        if active is not None:
            active.discard(st.task_id)
            if not active:
                del self._active[st.meta.owner]

    async def create(self, state: TaskState, *, max_active: int, lease_ms: int) -> bool:
        owner = state.meta.owner
        active = self._active.get(owner, ())
        if len(active) >= max_active:
            for tid in list(active):  # drop the expired before refusing
                self._live(tid)
            if len(self._active.get(owner, ())) >= max_active:
                return False
        st = state.snapshot()
        st.asks, st.answers = dict(st.asks), dict(st.answers)
        st.updated = st.updated or st.meta.created
        st.deadline = now_ms() + lease_ms
        self._tasks[st.task_id] = st
        self._owners.setdefault(owner, OrderedDict())[st.task_id] = None
        self._active.setdefault(owner, set()).add(st.task_id)
        return True

    async def get(self, task_id: str) -> TaskState | None:
        st = self._live(task_id)
        return st.snapshot() if st is not None else None

    async def page(self, owner: str, offset: int, limit: int) -> tuple[list[TaskState], int | None]:
        ids = list(self._owners.get(owner, ()))
        live = [st for tid in ids if (st := self._live(tid)) is not None]
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
        st.asks, st.answers, st.holder, st.deadline = {}, {}, None, None
        self._ended(st)
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
            st.asks, st.answers, st.holder, st.deadline = {}, {}, None, None
            self._ended(st)
        return before

    async def note(self, task_id: str, attempt: int, message: str) -> None:
        st = self._held(task_id, attempt)
        if st is not None and st.status == "working":
            st.message, st.updated = message, now_ms()

    async def renew(self, held: dict[str, int], holder: str, lease_ms: int) -> set[str]:
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

    async def next_deadline(self) -> int | None:
        return None

    async def claim_due(self, holder: str, lease_ms: int, limit: int = 100) -> list[Claim]:
        return []

    async def sweep(self) -> None:
        now = now_ms()
        for st in [st for st in self._tasks.values() if st.meta.expires <= now]:
            self._drop(st)

    async def close(self) -> None:
        self._tasks.clear()
        self._owners.clear()
        self._active.clear()

    def __len__(self) -> int:
        return len(self._tasks)
