"""Tasks in Redis, shared by every instance (standalone, Cluster or Sentinel: the app's one
client). The layout and each atomic step are in :mod:`mcpcore.tasks.redis_scripts`."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ..redis_client import guarded
from . import redis_scripts
from .base import Admission, Claim, TaskBounds
from .record import TaskMeta, TaskState, now_ms

__all__ = ["RedisTaskStore"]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisTaskStore:
    """A :class:`~mcpcore.tasks.base.TaskStore` in Redis. A task's hash expires with its TTL;
    the indexes drop expired entries as they are touched, so memory is bounded by the TTL.

    A finished task never changes again (until it expires), so each instance keeps the last
    ``cache_size`` it read, within ``cache_bytes`` (everything a task holds counts: its meta with
    the arguments, capabilities and answers, and its outcome): polling a finished task, or reading
    its result again, costs no round trip. A working task is always read from Redis (another
    instance may have changed it)."""

    shared = True

    def __init__(self, client: Any, *, namespace: str = "mcpcore", cache_size: int = 1024,
                 cache_bytes: int = 16 * 2**20, bounds: TaskBounds | None = None) -> None:
        self.r = client
        self.ns = namespace
        self.bounds = bounds or TaskBounds()
        self._done: OrderedDict[str, TaskState] = OrderedDict()
        self._done_bytes = 0
        self.cache_size = cache_size
        self.cache_bytes = cache_bytes
        self._index = f"{{{namespace}:tasks}}"
        self.leases = f"{self._index}:leases"
        self._scripts = {name.lower(): client.register_script(getattr(redis_scripts, name))
                         for name in redis_scripts.__all__}

    def key(self, task_id: str) -> str:
        """The hash of one task (its own hash tag)."""
        return f"{{{self.ns}:t:{task_id}}}"

    def _active(self, account: str) -> str:
        return f"{self._index}:a:{account}"

    def _all(self, account: str) -> str:
        return f"{self._index}:o:{account}"

    def _bytes(self, account: str) -> str:
        return f"{self._index}:b:{account}"

    def _indexes(self, account: str) -> list[str]:
        """KEYS of the account scripts: unfinished, all, leases, bytes."""
        return [self._active(account), self._all(account), self.leases, self._bytes(account)]

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        return await guarded(self._scripts[name](keys=keys, args=args))

    async def create(self, state: TaskState, *, lease_ms: int) -> Admission:
        meta = state.meta
        raw = meta.to_json()
        b = self.bounds
        verdict = [_text(v) for v in await self._run(
            "admit", self._indexes(meta.account),
            [meta.task_id, meta.expires, now_ms(), b.active, lease_ms, b.kept, b.bytes, len(raw)])]
        if verdict[0] != "created":
            return "too_many" if verdict[0] == "too_many" else "too_large"
        await self._drop_tasks(verdict[1:])
        try:
            created = await self._run("create", [self.key(meta.task_id)],
                                      [raw, meta.owner, meta.created, state.holder or "", lease_ms, meta.expires,
                                       meta.account, len(raw)])
        except BaseException:
            await self._forget(meta.account, meta.task_id)
            raise
        if not created:
            raise RuntimeError(f"task id {meta.task_id[:8]}... exists already")
        return "created"

    async def _drop_tasks(self, ids: list[str]) -> None:
        """Delete the hashes of tasks the account's bounds made room by forgetting."""
        for task_id in ids:
            self._forget_done(task_id)
            await guarded(self.r.delete(self.key(task_id)))

    async def _forget(self, account: str, task_id: str) -> None:
        try:
            await guarded(self.r.zrem(self._all(account), task_id))
            await guarded(self.r.hdel(self._bytes(account), task_id))
            await self._run("done", [self._active(account), self.leases], [task_id])
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
        size = 0
        for field, value in raw.items():
            size += len(field) + len(value)
        msg = raw.get(b"msg")
        state = raw.get(b"st")
        outcome = raw.get(b"o")
        deadline = raw.get(b"d")
        return TaskState(meta=TaskMeta.from_json(raw[b"m"]), status=_text(raw.get(b"s", b"working")),
                         message=msg.decode() if msg else None, updated=int(raw.get(b"u", b"0")),
                         outcome=outcome if outcome else None, asks=asks, answers=answers,
                         state=state.decode() if state is not None else None, attempt=int(raw.get(b"at", b"1")),
                         round=int(raw.get(b"r", b"0")), holder=_text(raw[b"h"]) if b"h" in raw else None,
                         deadline=int(deadline) if deadline else None, size=size)

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
        if st.size > self.cache_bytes // 16:
            return
        self._forget_done(st.task_id)
        self._done[st.task_id] = st.snapshot()
        self._done_bytes += st.size
        while self._done and (len(self._done) > self.cache_size or self._done_bytes > self.cache_bytes):
            _, old = self._done.popitem(last=False)
            self._done_bytes -= old.size

    def _forget_done(self, task_id: str) -> None:
        old = self._done.pop(task_id, None)
        if old is not None:
            self._done_bytes -= old.size

    async def page(self, owner: str, offset: int, limit: int) -> tuple[list[TaskState], int | None]:
        ids = await guarded(self.r.zrangebyscore(self._all(owner), now_ms(), "+inf", start=offset, num=limit + 1))
        more = len(ids) > limit
        found = await asyncio.gather(*(self.get(_text(i)) for i in ids[:limit]))
        return [st for st in found if st is not None], offset + limit if more else None

    async def finish(self, task_id: str, attempt: int, status: str, outcome: bytes | None,
                     message: str | None) -> bool:
        done = await self._run("finish", [self.key(task_id)],
                               [attempt, status, outcome or b"", message or "", now_ms()])
        if not done:
            return False
        account, size = _text(done[0]), int(done[1])
        forgotten = await self._run("keep", self._indexes(account), [task_id, size, self.bounds.bytes])
        await self._drop_tasks([_text(t) for t in forgotten])
        return True

    async def _ended(self, task_id: str, account: str) -> None:
        await self._run("done", [self._active(account), self.leases], [task_id])

    async def park(self, task_id: str, attempt: int, asks: dict[str, bytes], state: str | None,
                   message: str | None) -> bool:
        args: list[Any] = [attempt, state or "", "1" if state is not None else "0", message or "", now_ms()]
        for key, value in asks.items():
            args += [key, value]
        # The lease entry stays: an answer may already have scheduled the next attempt on it;
        # the watcher drops it once due if the task still waits.
        return bool(await self._run("park", [self.key(task_id)], args))

    async def answer(self, task_id: str, answers: dict[str, bytes], holder: str, lease_ms: int) -> int | None:
        # Scheduled first: a task made "working" by this answer always has a lease entry, even
        # if this instance dies right after (an entry with nothing due is dropped when looked at).
        await self._run("schedule", [self.leases], [task_id, lease_ms])
        args: list[Any] = [holder, now_ms(), lease_ms]
        for key, value in answers.items():
            args += [key, value]
        attempt = await self._run("answer", [self.key(task_id)], args)
        return int(attempt) or None

    async def cancel(self, task_id: str, message: str) -> str | None:
        found = await self._run("cancel", [self.key(task_id)], [message, now_ms()])
        if found is None:
            return None
        before, account = _text(found[0]), _text(found[1])
        await self._ended(task_id, account)
        return before

    async def note(self, task_id: str, attempt: int, message: str) -> None:
        await self._run("note", [self.key(task_id)], [attempt, message, now_ms()])

    async def renew(self, held: Mapping[str, int], holder: str, lease_ms: int) -> set[str]:
        ids = list(held)
        kept = await asyncio.gather(*(self._run("renew", [self.key(t)], [holder, held[t], lease_ms]) for t in ids))
        still = {t: int(d) for t, d in zip(ids, kept, strict=True) if d}
        if still:
            await guarded(self.r.zadd(self.leases, still))
        return {t for t, d in zip(ids, kept, strict=True) if not d}

    async def release(self, task_id: str, holder: str, attempt: int) -> None:
        at = await self._run("release", [self.key(task_id)], [holder, attempt])
        if at:
            await guarded(self.r.zadd(self.leases, {task_id: int(at)}))

    async def next_due_in(self) -> int | None:
        due_in = await self._run("next", [self.leases], [])
        return None if due_in is None else int(due_in)

    async def claim_due(self, holder: str, lease_ms: int, running: Mapping[str, int],
                        limit: int = 100) -> list[Claim]:
        claims: list[Claim] = []
        for raw_id in await self._run("due", [self.leases], [limit]):
            task_id = _text(raw_id)
            mine = running.get(task_id, 0)
            verdict = [_text(v) for v in await self._run("claim", [self.key(task_id)], [holder, lease_ms, mine])]
            if verdict[0] == "claimed":
                await guarded(self.r.zadd(self.leases, {task_id: int(verdict[2])}))
                claims.append((task_id, int(verdict[1])))
            elif verdict[0] == "held":
                await guarded(self.r.zadd(self.leases, {task_id: int(verdict[1])}))
            else:
                await self._run("drop_due", [self.leases], [task_id])
                if verdict[0] == "idle" and verdict[1] in ("completed", "failed", "cancelled"):
                    await self._ended(task_id, verdict[2])
        return claims

    async def sweep(self) -> None:
        return None

    async def close(self) -> None:
        self._done.clear()
        self._done_bytes = 0
