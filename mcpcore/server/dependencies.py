"""Resolving a definition's dependencies for one request, and running their cleanup.

Each dependency is called once per request (unless it asked for ``use_cache=False``), after the
arguments were validated and before the handler's first attempt; its value stays the same across
input rounds. Generators are entered on an ``AsyncExitStack`` the invoke pipeline closes after
the handler, with the handler's exception (or the cancellation) thrown in at their ``yield``, so
their cleanup runs exactly once whatever happened. Sync callables run in a worker thread, as
sync handlers do.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread

from ..context import Context
from ..definitions.depends import Dependency

__all__ = ["Overrides", "resolve"]

Overrides = Mapping[Callable[..., Any], Dependency]
"""Dependencies replaced for the app (``app.dependency_overrides``), already analysed."""


class _Resolution:
    __slots__ = ("cache", "ctx", "make_ctx", "overrides", "stack")

    def __init__(self, make_ctx: Callable[[], Context], stack: contextlib.AsyncExitStack | None,
                 overrides: Overrides | None) -> None:
        self.make_ctx = make_ctx
        self.stack = stack
        self.overrides = overrides
        self.cache: dict[Callable[..., Any], Any] = {}
        self.ctx: Context | None = None

    def context(self) -> Context:
        ctx = self.ctx
        if ctx is None:
            ctx = self.ctx = self.make_ctx()
        return ctx

    async def solve(self, dep: Dependency) -> Any:
        key = dep.call
        if self.overrides:
            dep = self.overrides.get(key, dep)
        if dep.use_cache and key in self.cache:
            return self.cache[key]
        kwargs: dict[str, Any] = {}
        if dep.ctx_param is not None:
            kwargs[dep.ctx_param] = self.context()
        for name, sub in dep.subs:
            kwargs[name] = await self.solve(sub)
        value = await self._call(dep, kwargs)
        if dep.use_cache:
            self.cache[key] = value
        return value

    async def _call(self, dep: Dependency, kwargs: dict[str, Any]) -> Any:
        kind = dep.kind
        if kind == "async":
            return await dep.call(**kwargs)
        if kind == "sync":
            return await anyio.to_thread.run_sync(functools.partial(dep.call, **kwargs))
        stack = self.stack
        if stack is None:  # the plan said no generator: an override brought one in
            raise RuntimeError(f"dependency {dep.name} has cleanup but the request has no exit stack")
        if kind == "asyncgen":
            return await stack.enter_async_context(contextlib.asynccontextmanager(dep.call)(**kwargs))
        manager = contextlib.contextmanager(dep.call)(**kwargs)
        value = await anyio.to_thread.run_sync(manager.__enter__)

        async def leave(*exc: Any) -> bool | None:
            return await anyio.to_thread.run_sync(manager.__exit__, *exc)

        stack.push_async_exit(leave)
        return value


async def resolve(deps: tuple[tuple[str, Dependency], ...], make_ctx: Callable[[], Context],
                  stack: contextlib.AsyncExitStack | None, overrides: Overrides | None = None) -> dict[str, Any]:
    """The value of every dependency parameter, by parameter name. ``make_ctx`` builds the
    ``Context`` dependencies receive (one per request); generators are entered on ``stack``."""
    run = _Resolution(make_ctx, stack, overrides)
    return {name: await run.solve(dep) for name, dep in deps}
