"""Lists that depend on who asks: a backend reached with each caller's own credential
(``DelegatedToken``, ``CallerToken``) is listed with that credential, per caller.

Each caller's lists are kept for the ``ttlMs`` the backend gave them (else the proxy's
``refresh_s``), in this process, under the caller's key, and never answer another caller: the
definitions they name join the parent's registry, each visible only to callers whose own list
holds that very entry (a caller whose entry of the same name differs sees neither until its
list is fetched again). A backend's list change makes every caller's lists stale.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..context import Context, Inbound
from .messages import caller_key

__all__ = ["CallerViews"]

log = logging.getLogger("mcpcore.compose")

Lists = dict[str, list[dict[str, Any]]]
Fetch = Callable[[Inbound], Awaitable[tuple[Lists, float | None]]]
"""The caller's lists by kind, and the shortest ``ttlMs`` among their pages (seconds), if any."""
_KEYS = {"templates": "uriTemplate", "resources": "uri"}
_FAILED_TTL_S = 5.0


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
            self.fetches += 1
            try:
                lists, ttl = await self._fetch(req)
            except Exception as exc:  # no credential, a refusal, the backend down: nothing from it for now
                log.info("a caller's lists of a proxied backend could not be fetched: %s", exc)
                self._views[key] = (time.monotonic() + _FAILED_TTL_S, {})
                return
            view = {kind: {e[_KEYS.get(kind, "name")]: e for e in entries} for kind, entries in lists.items()}
            self._views.pop(key, None)
            while len(self._views) >= self.max_callers:
                oldest = next(iter(self._views))
                del self._views[oldest]
                self._locks.pop(oldest, None)
            self._views[key] = (time.monotonic() + (ttl if ttl is not None else self.default_ttl_s), view)
            for kind, entries in lists.items():
                self._merge(kind, entries)

    def stale(self) -> None:
        """Every caller's lists are fetched again at its next list request (the backend's changed)."""
        self._views = {k: (0.0, v) for k, (_, v) in self._views.items()}

    def sees(self, kind: str, name: str, entry: dict[str, Any]) -> Callable[[Context], bool]:
        """The ``visible_to`` of the definition made from ``entry``: callers whose list holds it."""
        def rule(ctx: Context) -> bool:
            found = self._views.get(caller_key(ctx._req))
            return found is not None and found[1].get(kind, {}).get(name) == entry
        return rule
