"""A mounted child's own set-up, carried through the parent.

A child's definitions run in the parent's requests, yet see what the child set up for itself:

- its ``setup`` hook runs at the parent's startup (after the parent's stores and middleware, before
  the parent's own ``setup``), with the child as ``app``, and its rest at the parent's shutdown;
- ``ctx.app_state`` in the child's handlers and dependencies is the child's ``app.state``;
- ``ctx.state`` is the child's own store when it declared one (``McpApp(storage=...)``), else the
  parent's;
- ``child.dependency_overrides`` apply to the child's definitions, under the parent's (an override
  set on the parent wins).

Each mounted copy gets a :class:`MountedPipeline`: every way a definition is invoked (a request,
its input rounds, a task's attempt) passes through it, so the set-up holds in each.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import ChainMap
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..context import ContextServices, Inbound
from ..middleware.base import Middleware
from ..server.dependencies import Overrides, Resolution
from ..server.invoke import Pipeline
from ..server.prompts import PROMPTS
from ..server.resources import RESOURCES
from ..server.tools import TOOLS

if TYPE_CHECKING:
    from ..config import Settings
    from ..extensions.seam import Seam
    from ..server.core import ServerCore

__all__ = ["ChildLifecycle", "MountedPipeline", "family_of"]


def family_of(d: Any) -> Any:
    """The invoke family of a tool, prompt or resource definition."""
    from ..definitions.prompts import PromptDefinition
    from ..definitions.tools import ToolDefinition

    return TOOLS if isinstance(d, ToolDefinition) else PROMPTS if isinstance(d, PromptDefinition) else RESOURCES


class Carrier:
    """What one mount carries into each invocation of its child's definitions (and, for a definition
    the child itself mounts, what that mount carries, inside). ``child``: the child app's seam."""

    def __init__(self, child: Seam, enter: Callable[[], Any], leave: Callable[[Any], None],
                 inner: Carrier | None = None) -> None:
        self.child = child
        self.enter = enter
        """Adds the mount's namespace for the call (its notifications are renamed); returns a token."""
        self.leave = leave
        self.inner = inner

    def around_inner(self, inner: Carrier | None) -> Carrier:
        """This carrier with ``inner`` (the child's own mount's) run inside it."""
        return self if inner is None else Carrier(self.child, self.enter, self.leave, inner)

    def chain(self) -> list[Carrier]:
        """This carrier and those inside it, outermost first."""
        out: list[Carrier] = []
        c: Carrier | None = self
        while c is not None:
            out.append(c)
            c = c.inner
        return out

    def services(self, outer: ContextServices) -> ContextServices:
        """``outer`` (the parent's services) with the child's ``app.state`` and, when it has its own, its store."""
        own = self.child.own_state is not None
        return dataclasses.replace(outer, app_state=self.child.services.app_state,
                                   state=self.child.services.state if own else outer.state)

    def overrides(self, core: ServerCore) -> Overrides | None:
        """The parent's overrides, then the child's (then those of a child it mounts)."""
        maps = [m for m in (core.dependency_overrides, *(c.child.core.dependency_overrides for c in self.chain()))
                if m]
        return maps[0] if len(maps) == 1 else ChainMap(*maps) if maps else core.dependency_overrides

    def overridden(self, core: ServerCore) -> bool:
        return bool(core.dependency_overrides) or any(c.child.core.dependency_overrides for c in self.chain())

    @contextlib.contextmanager
    def around(self, req: Inbound) -> Any:
        saved = req.services
        tokens = []
        try:
            for c in self.chain():
                req.services = c.services(req.services)
                tokens.append((c, c.enter()))
            yield
        finally:
            for c, token in reversed(tokens):
                c.leave(token)
            req.services = saved


class MountedPipeline(Pipeline[Any]):
    """The pipeline of a mounted copy: the inherited steps, each run inside the child's set-up.

    Every call takes :meth:`rest` (``simple`` is off), which swaps the request's services for the
    child's view of them while the definition runs, dependencies included."""

    __slots__ = ("carrier", "inner", "was_simple")

    def __init__(self, family: Any, d: Any, carrier: Carrier) -> None:
        super().__init__(family, d)
        self.carrier = carrier
        self.was_simple = self.simple
        self.inner = self.rest
        self.simple = False
        self.rest = self._carried

    async def _carried(self, core: ServerCore, validated: Any, req: Inbound, target: str) -> dict[str, Any]:
        with self.carrier.around(req):
            return await self.inner(core, validated, req, target)

    async def once(self, core: ServerCore, validated: Any, req: Inbound, target: str) -> dict[str, Any]:
        with self.carrier.around(req):
            return await super().once(core, validated, req, target)

    def _once(self, core: ServerCore, validated: Any, req: Inbound, target: str) -> Awaitable[dict[str, Any]]:
        if self.was_simple:
            return self.attempt(validated, req, target)
        return self._resolution(core, req, target).around(
            self.d.args.deps, lambda resolved: self.attempt(validated, req, target, resolved))

    def _resolution(self, core: ServerCore, req: Inbound, target: str) -> Resolution:
        d, family = self.d, self.family
        return Resolution(lambda: family.context(d, req, family.operation(d, target), target),
                          self.carrier.overrides(core))

    def _dependencies(self, core: ServerCore, validated: Any, req: Inbound, target: str) -> Awaitable[dict[str, Any]]:
        if req.request_state is None and not self.carrier.overridden(core):
            return self._plain(core, validated, req, target, self.plain)  # type: ignore[arg-type]
        return self._with_dependencies(core, validated, req, target)


class ChildLifecycle(Middleware):
    """Put in the parent's middleware by its first mount of an app: at the parent's startup, each
    mounted child's own store (when it declared one), its middleware's ``startup`` and its ``setup``;
    at shutdown, the same closed in reverse."""

    name = "mounted children's set-up"

    def __init__(self, children: Callable[[], list[Seam]]) -> None:
        """``children``: the seams of the apps the parent mounts, in order."""
        self.children = children
        self._exit: contextlib.AsyncExitStack | None = None

    async def startup(self, settings: Settings, redis: Any = None) -> None:
        stack = contextlib.AsyncExitStack()
        await stack.__aenter__()
        try:
            for child in self.children():
                if child.own_state is not None:
                    await child.own_state.startup(child.settings, redis)
                    stack.push_async_callback(child.own_state.shutdown)
                for layer in child.middleware:
                    await layer.startup(child.settings, redis)
                    stack.push_async_callback(layer.shutdown)
                if child.setup is not None:
                    await stack.enter_async_context(child.setup())
        except BaseException:
            await stack.aclose()
            raise
        self._exit = stack

    async def shutdown(self) -> None:
        stack, self._exit = self._exit, None
        if stack is not None:
            await stack.aclose()
