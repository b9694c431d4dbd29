"""Lists that depend on who asks: a backend reached with each caller's own credential
(``DelegatedToken``, ``CallerToken``) is listed with that credential, per caller.

Each caller's lists are kept for the ``ttlMs`` the backend gave them (else the proxy's
``refresh_s``), in this process, under the caller's key, and never answer another caller: the
definitions they name join the parent's registry, each visible only to callers whose own list
holds that very entry (a caller whose entry of the same name differs sees neither until its
list is fetched again). A backend's list change makes every caller's lists stale.

With Redis stores (:class:`SharedViews`) a caller's lists are shared by every instance too: kept
in Redis for the same ``ttlMs``, under the caller's key, so one instance's fetch answers the
others (one backend list request per caller per ``ttlMs`` across instances). A backend's list
change removes them there as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .. import _json
from ..context import Context, Inbound
from .messages import caller_key

__all__ = ["CallerViews", "SharedViews"]

log = logging.getLogger("mcpcore.compose")

Lists = dict[str, list[dict[str, Any]]]
Fetch = Callable[[Inbound], Awaitable[tuple[Lists, float | None]]]
"""The caller's lists by kind, and the shortest ``ttlMs`` among their pages (seconds), if any."""
_KEYS = {"templates": "uriTemplate", "resources": "uri"}
_FAILED_TTL_S = 5.0


class SharedViews:
    """Callers' lists in Redis, for every instance: one key per caller, living for the list's ``ttlMs``."""

    def __init__(self, redis: Any, prefix: str) -> None:
        self.redis = redis
        self.prefix = prefix

    def _key(self, caller: str) -> str:
        return f"{self.prefix}{{{caller}}}"

    async def get(self, caller: str) -> tuple[Lists, float] | None:
        """The caller's lists another instance (or this one) fetched, and the seconds they have left."""
        key = self._key(caller)
        raw = await self.redis.get(key)
        if raw is None:
            return None
        left_ms = await self.redis.pttl(key)
        lists = _json.loads(raw)
        if not isinstance(lists, dict) or not isinstance(left_ms, int) or left_ms <= 0:
            return None
        return lists, left_ms / 1000

    async def put(self, caller: str, lists: Lists, ttl_s: float) -> None:
        await self.redis.set(self._key(caller), _json.dumps(lists), px=max(int(ttl_s * 1000), 1))

    async def clear(self) -> None:
        """Every caller's lists gone (the backend's changed)."""
        async for key in self.redis.scan_iter(match=f"{self.prefix}*", count=500):
            await self.redis.delete(key)


class CallerViews:
    """Each caller's lists of one backend (at most ``max_callers``, the oldest dropped first)."""

    def __init__(self, fetch: Fetch, merge: Callable[[str, list[dict[str, Any]]], None], default_ttl_s: float,
                 max_callers: int = 10_000) -> None:
        self._fetch = fetch
        self._merge = merge
        self.default_ttl_s = default_ttl_s
        self.max_callers = max_callers
        self._views: dict[str, tuple[float, dict[str, dict[str, dict[str, Any]]]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.fetches = 0
        """How many times a caller's lists were fetched (what the cache saves is measured by)."""
        self.shared: SharedViews | None = None
        """Where every instance keeps the callers' lists (Redis stores), if anywhere."""
        self._clearing: set[asyncio.Task[None]] = set()

    async def ensure(self, req: Inbound, *, fresh: bool) -> None:
        """Have ``req``'s caller's lists (fetched again once stale, with ``fresh``: a list request)."""
        key = caller_key(req)
        found = self._views.get(key)
        if found is not None and (not fresh or found[0] > time.monotonic()):
            return
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            found = self._views.get(key)
            if found is not None and (not fresh or found[0] > time.monotonic()):
                return
            kept = await self._shared_get(key)
            if kept is not None:  # another instance fetched them within their ttlMs
                self._keep(key, *kept)
                return
            self.fetches += 1
            try:
                lists, ttl = await self._fetch(req)
            except Exception as exc:  # no credential, a refusal, the backend down: nothing from it for now
                log.info("a caller's lists of a proxied backend could not be fetched: %s", exc)
                self._views[key] = (time.monotonic() + _FAILED_TTL_S, {})
                return
            ttl_s = ttl if ttl is not None else self.default_ttl_s
            if self.shared is not None:
                with contextlib.suppress(Exception):  # Redis away: this instance keeps them alone
                    await self.shared.put(key, lists, ttl_s)
            self._keep(key, lists, ttl_s)

    async def _shared_get(self, key: str) -> tuple[Lists, float] | None:
        if self.shared is None:
            return None
        try:
            return await self.shared.get(key)
        except Exception as exc:  # Redis away: fetched here
            log.info("callers' lists in Redis could not be read: %s", exc)
            return None

    def _keep(self, key: str, lists: Lists, ttl_s: float) -> None:
        """Keep ``key``'s caller's lists for ``ttl_s``; their definitions join the registry."""
        view = {kind: {e[_KEYS.get(kind, "name")]: e for e in entries} for kind, entries in lists.items()}
        self._views.pop(key, None)
        while len(self._views) >= self.max_callers:
            oldest = next(iter(self._views))
            del self._views[oldest]
            self._locks.pop(oldest, None)
        self._views[key] = (time.monotonic() + ttl_s, view)
        for kind, entries in lists.items():
            self._merge(kind, entries)

    def stale(self) -> None:
        """Every caller's lists are fetched again at its next list request (the backend's changed)."""
        self._views = {k: (0.0, v) for k, (_, v) in self._views.items()}
        if self.shared is not None:
            task = asyncio.get_running_loop().create_task(self._clear(self.shared))
            self._clearing.add(task)
            task.add_done_callback(self._clearing.discard)

    @staticmethod
    async def _clear(shared: SharedViews) -> None:
        with contextlib.suppress(Exception):  # Redis away: the lists expire with their ttlMs
            await shared.clear()

    def sees(self, kind: str, name: str, entry: dict[str, Any]) -> Callable[[Context], bool]:
        """The ``visible_to`` of the definition made from ``entry``: callers whose list holds it."""
        def rule(ctx: Context) -> bool:
            found = self._views.get(caller_key(ctx._req))
            return found is not None and found[1].get(kind, {}).get(name) == entry
        return rule
