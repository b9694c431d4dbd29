"""Tasks in Redis, shared by every instance (standalone, Cluster or Sentinel: the app's one
client). The layout and each atomic step are in :mod:`mcpcore.tasks.redis_scripts`."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from ..redis_client import guarded
from .base import Claim
from .record import TaskMeta, TaskState, now_ms
from .redis_scripts import ADMIT, ANSWER, CANCEL, CLAIM, CREATE, DONE, DROP_DUE, FINISH, NOTE, PARK, RELEASE, RENEW

__all__ = ["RedisTaskStore"]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisTaskStore:
    """A :class:`~mcpcore.tasks.base.TaskStore` in Redis. A task's hash expires with its TTL;
    the indexes drop expired entries as they are touched, so memory is bounded by the TTL.

    A finished task never changes again (until it expires), so each instance keeps the last
    ``cache_size`` it read: polling a finished task, or reading its result again, costs no round
    trip. A working task is always read from Redis (another instance may have changed it)."""

    shared = True

    def __init__(self, client: Any, *, namespace: str = "mcpcore", cache_size: int = 1024,
                 cache_bytes: int = 16 * 2**20) -> None:
        self.r = client
        self.ns = namespace
        self._done: OrderedDict[str, TaskState] = OrderedDict()
        self._done_bytes = 0
        self.cache_size = cache_size
        self.cache_bytes = cache_bytes
        self._index = f"{{{namespace}:tasks}}"
        self.leases = f"{self._index}:leases"
        self._scripts = {name: client.register_script(src) for name, src in (
            ("create", CREATE), ("admit", ADMIT), ("done", DONE), ("drop_due", DROP_DUE), ("finish", FINISH),
            ("park", PARK), ("answer", ANSWER), ("cancel", CANCEL), ("note", NOTE), ("renew", RENEW),
            ("release", RELEASE), ("claim", CLAIM))}

    def key(self, task_id: str) -> str:
        """The hash of one task (its own hash tag)."""
        return f"{{{self.ns}:t:{task_id}}}"

    def _active(self, owner: str) -> str:
        return f"{self._index}:a:{owner}"

    def _all(self, owner: str) -> str:
        return f"{self._index}:o:{owner}"

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        return await guarded(self._scripts[name](keys=keys, args=args))

    async def create(self, state: TaskState, *, max_active: int, lease_ms: int) -> bool:
        meta = state.meta
        now = now_ms()
        deadline = now + lease_ms
        admitted = await self._run("admit", [self._active(meta.owner), self._all(meta.owner), self.leases],
                                   [meta.task_id, meta.expires, now, max_active, deadline])
        if not admitted:
            return False
        try:
            created = await self._run("create", [self.key(meta.task_id)],
                                      [meta.to_json(), meta.owner, meta.created, state.holder or "", deadline,
                                       meta.expires])
        except BaseException:
            await self._forget(meta.owner, meta.task_id)
            raise
        return bool(created)

    async def _forget(self, owner: str, task_id: str) -> None:
        try:
            await guarded(self.r.zrem(self._all(owner), task_id))
            await self._run("done", [self._active(owner), self.leases], [task_id])
        except Exception:  # the entries lapse with the task's expiry anyway
            pass

    def _state(self, raw: dict[bytes, bytes]) -> TaskState | None:
        if not raw or b"m" not in raw:
            return None
        asks: dict[str, bytes] = {}
        answers: dict[str, bytes] = {}
        for field, value in raw.items():
            if field[:2] == b"q:":
                asks[field[2:].decode()] = value
            elif field[:2] == b"a:":
                answers[field[2:].decode()] = value
        for key in answers:
            asks.pop(key, None)
        msg = raw.get(b"msg")
        state = raw.get(b"st")
        outcome = raw.get(b"o")
        deadline = raw.get(b"d")
        return TaskState(meta=TaskMeta.from_json(raw[b"m"]), status=_text(raw.get(b"s", b"working")),
                         message=msg.decode() if msg else None, updated=int(raw.get(b"u", b"0")),
                         outcome=outcome if outcome else None, asks=asks, answers=answers,
                         state=state.decode() if state is not None else None, attempt=int(raw.get(b"at", b"1")),
                         round=int(raw.get(b"r", b"0")), holder=_text(raw[b"h"]) if b"h" in raw else None,
                         deadline=int(deadline) if deadline else None)

    async def get(self, task_id: str) -> TaskState | None:
        done = self._done.get(task_id)
        if done is not None:
            if done.meta.expires > now_ms():
                self._done.move_to_end(task_id)
                return done.snapshot()
            self._forget_done(task_id)
        st = self._state(await guarded(self.r.hgetall(self.key(task_id))))
        if st is not None and st.terminal:
            self._keep_done(st)
        return st

    def _keep_done(self, st: TaskState) -> None:
        size = len(st.outcome or b"")
        if size > self.cache_bytes // 16:
            return
        self._forget_done(st.task_id)
        self._done[st.task_id] = st.snapshot()
        self._done_bytes += size
        while self._done and (len(self._done) > self.cache_size or self._done_bytes > self.cache_bytes):
            _, old = self._done.popitem(last=False)
            self._done_bytes -= len(old.outcome or b"")

    def _forget_done(self, task_id: str) -> None:
        old = self._done.pop(task_id, None)
        if old is not None:
            self._done_bytes -= len(old.outcome or b"")

    async def page(self, owner: str, offset: int, limit: int) -> tuple[list[TaskState], int | None]:
        ids = await guarded(self.r.zrangebyscore(self._all(owner), now_ms(), "+inf", start=offset, num=limit + 1))
        more = len(ids) > limit
        found = await asyncio.gather(*(self.get(_text(i)) for i in ids[:limit]))
        return [st for st in found if st is not None], offset + limit if more else None

    async def finish(self, task_id: str, attempt: int, status: str, outcome: bytes | None,
                     message: str | None) -> bool:
        done = await self._run("finish", [self.key(task_id)],
                               [attempt, status, outcome or b"", message or "", now_ms()])
        if done:
            await self._ended(task_id)
        return bool(done)

    async def _ended(self, task_id: str, owner: str | None = None) -> None:
        if owner is None:
            raw = await guarded(self.r.hget(self.key(task_id), "ow"))
            if raw is None:
                return
            owner = _text(raw)
        await self._run("done", [self._active(owner), self.leases], [task_id])

    async def park(self, task_id: str, attempt: int, asks: dict[str, bytes], state: str | None,
                   message: str | None) -> bool:
        args: list[Any] = [attempt, state or "", "1" if state is not None else "0", message or "", now_ms()]
        for key, value in asks.items():
            args += [key, value]
        # The lease entry stays: an answer may already have scheduled the next attempt on it;
        # the watcher drops it once due if the task still waits.
        return bool(await self._run("park", [self.key(task_id)], args))

    async def answer(self, task_id: str, answers: dict[str, bytes], holder: str, lease_ms: int) -> int | None:
        now = now_ms()
        deadline = now + lease_ms
        # Scheduled first: a task made "working" by this answer always has a lease entry, even
        # if this instance dies right after (an entry with nothing due is dropped when looked at).
        await guarded(self.r.zadd(self.leases, {task_id: deadline}))
        args: list[Any] = [holder, now, deadline]
        for key, value in answers.items():
            args += [key, value]
        attempt = await self._run("answer", [self.key(task_id)], args)
        return int(attempt) or None

    async def cancel(self, task_id: str, message: str) -> str | None:
        before = await self._run("cancel", [self.key(task_id)], [message, now_ms()])
        if before is None:
            return None
        before = _text(before)
        await self._ended(task_id)
        return before

    async def note(self, task_id: str, attempt: int, message: str) -> None:
        await self._run("note", [self.key(task_id)], [attempt, message, now_ms()])

    async def renew(self, held: dict[str, int], holder: str, lease_ms: int) -> set[str]:
        until = now_ms() + lease_ms
        ids = list(held)
        kept = await asyncio.gather(*(self._run("renew", [self.key(t)], [holder, held[t], until]) for t in ids))
        still = {t: until for t, ok in zip(ids, kept, strict=True) if ok}
        if still:
            await guarded(self.r.zadd(self.leases, still))
        return {t for t, ok in zip(ids, kept, strict=True) if not ok}

    async def release(self, task_id: str, holder: str, attempt: int) -> None:
        now = now_ms()
        if await self._run("release", [self.key(task_id)], [holder, attempt, now]):
            await guarded(self.r.zadd(self.leases, {task_id: now}))

    async def next_deadline(self) -> int | None:
        first = await guarded(self.r.zrange(self.leases, 0, 0, withscores=True))
        return int(first[0][1]) if first else None

    async def claim_due(self, holder: str, lease_ms: int, limit: int = 100) -> list[Claim]:
        now = now_ms()
        due = await guarded(self.r.zrangebyscore(self.leases, "-inf", now, start=0, num=limit))
        claims: list[Claim] = []
        for raw_id in due:
            task_id = _text(raw_id)
            deadline = now_ms() + lease_ms
            verdict = [_text(v) for v in await self._run("claim", [self.key(task_id)], [holder, now, deadline])]
            if verdict[0] == "claimed":
                await guarded(self.r.zadd(self.leases, {task_id: deadline}))
                claims.append((task_id, int(verdict[1])))
            elif verdict[0] == "held":
                await guarded(self.r.zadd(self.leases, {task_id: int(verdict[1])}))
            else:
                await self._run("drop_due", [self.leases], [task_id, now])
                if verdict[0] == "idle" and verdict[1] in ("completed", "failed", "cancelled"):
                    await self._run("done", [self._active(verdict[2]), self.leases], [task_id])
        return claims

    async def sweep(self) -> None:
        return None

    async def close(self) -> None:
        self._done.clear()
        self._done_bytes = 0
