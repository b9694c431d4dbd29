"""Resolving a definition's dependencies for one request, and running their cleanup.

Each dependency is called once per request (unless it asked for ``use_cache=False``), after the
arguments were validated and before the handler's first attempt; its value stays the same across
input rounds. A generator's code after ``yield`` runs in :meth:`Resolution.close`, last opened
first, once the handler is done, with the handler's exception (or the cancellation) thrown in at
the ``yield``, so its cleanup runs exactly once whatever happened. Sync callables and sync
generators run in a worker thread, as sync handlers do.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, TypeVar

import anyio.to_thread

from ..context import Context
from ..definitions.depends import Dependency

__all__ = ["Overrides", "Resolution", "close_all"]

Overrides = Mapping[Callable[..., Any], Dependency]
"""Dependencies replaced for the app (``app.dependency_overrides``), already analysed."""

_DONE = object()
T = TypeVar("T")


def _advance(gen: Generator[Any, None, None], exc: BaseException | None) -> Any:
    """One step of a sync generator in a worker thread: ``_DONE`` when it returned."""
    try:
        return next(gen) if exc is None else gen.throw(exc)
    except StopIteration:
        return _DONE


class Resolution:
    """The dependencies of one request: their values, then their cleanup."""

    __slots__ = ("_ctx", "_exits", "cache", "make_ctx", "overrides")

    def __init__(self, make_ctx: Callable[[], Context], overrides: Overrides | None = None) -> None:
        self.make_ctx = make_ctx
        self.overrides = overrides
        self.cache: dict[Callable[..., Any], Any] = {}
        self._ctx: Context | None = None
        self._exits: list[AsyncGenerator[Any, None] | Generator[Any, None, None]] = []

    async def solve(self, dep: Dependency) -> Any:
        """The value of one dependency (and of those under it)."""
        key = dep.call
        if self.overrides:
            dep = self.overrides.get(key, dep)
        if dep.use_cache and key in self.cache:
            return self.cache[key]
        kwargs: dict[str, Any] = {}
        if dep.ctx_param is not None:
            ctx = self._ctx
            if ctx is None:
                ctx = self._ctx = self.make_ctx()
            kwargs[dep.ctx_param] = ctx
        for name, sub in dep.subs:
            kwargs[name] = await self.solve(sub)
        kind = dep.kind
        if kind == "async":
            value = await dep.call(**kwargs)
        elif kind == "sync":
            value = await anyio.to_thread.run_sync(functools.partial(dep.call, **kwargs))
        elif kind == "asyncgen":
            agen: AsyncGenerator[Any, None] = dep.call(**kwargs)
            try:
                value = await agen.__anext__()
            except StopAsyncIteration:
                raise RuntimeError(f"dependency {dep.name} did not yield") from None
            self._exits.append(agen)
        else:
            gen: Generator[Any, None, None] = dep.call(**kwargs)
            value = await anyio.to_thread.run_sync(_advance, gen, None)
            if value is _DONE:
                raise RuntimeError(f"dependency {dep.name} did not yield")
            self._exits.append(gen)
        if dep.use_cache:
            self.cache[key] = value
        return value

    async def around(self, deps: Sequence[tuple[str, Dependency]],
                     body: Callable[[dict[str, Any]], Awaitable[T]]) -> T:
        """Resolve ``deps`` (parameter name, dependency), run ``body`` with their values, then
        the generators' cleanup, with ``body``'s exception (or the cancellation) thrown in."""
        try:
            values = {name: await self.solve(dep) for name, dep in deps}
            result = await body(values)
        except BaseException as exc:
            if self._exits:
                await self.close(exc)
            raise
        if self._exits:
            await self.close()
        return result

    async def close(self, exc: BaseException | None = None) -> None:
        """Run each generator's cleanup (see :func:`close_all`)."""
        exits, self._exits = self._exits, []
        await close_all(exits, exc)


async def close_all(exits: list[AsyncGenerator[Any, None] | Generator[Any, None, None]],
                    exc: BaseException | None = None) -> None:
    """Run each generator on from its ``yield``, last opened first, with ``exc`` (the handler's
    failure or cancellation) thrown in. A cleanup that raises something else has its error raised
    here, once every other cleanup ran; ``exc`` itself is the caller's to raise."""
    error = exc
    while exits:
        gen = exits.pop()
        try:
            if isinstance(gen, AsyncGenerator):
                try:
                    await (gen.__anext__() if error is None else gen.athrow(error))
                except StopAsyncIteration:
                    continue
                await gen.aclose()
            elif await anyio.to_thread.run_sync(_advance, gen, error) is _DONE:
                continue
            else:
                gen.close()
            raise RuntimeError("a dependency yielded more than once")
        except BaseException as raised:
            if raised is not error:
                if error is not None and raised.__context__ is None:
                    raised.__context__ = error
                error = raised
    if error is not None and error is not exc:
        raise error
