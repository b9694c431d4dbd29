"""The user's middleware layers put together: one chain per method, built once per app.

A method's chain holds, layer by layer (the first layer outermost), the layer's general hook and
then its method hook, each only when the layer's class overrides it. A method no layer hooks
has no chain at all, so it is served exactly as without middleware.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..middleware.base import HOOKS, Call, CallNext, Middleware, overridden

__all__ = ["Layers", "Step"]

Step = Callable[[Call], Awaitable[Any]]


class _Link:
    """One hook bound to the rest of its chain (what the hook receives as ``call_next``)."""

    __slots__ = ("hook", "rest")

    def __init__(self, hook: Callable[[Call, CallNext], Awaitable[Any]], rest: Step) -> None:
        self.hook = hook
        self.rest = rest

    def __call__(self, call: Call) -> Awaitable[Any]:
        return self.hook(call, self.rest)


def _link(hooks: Sequence[Callable[[Call, CallNext], Awaitable[Any]]], inner: Step) -> Step:
    step = inner
    for hook in reversed(hooks):
        step = _Link(hook, step)
    return step


class Layers:
    """The app's middleware (``McpApp(middleware=[...])``) around ``inner``, the method itself."""

    def __init__(self, layers: Sequence[Middleware], inner: Step) -> None:
        for layer in layers:
            if not isinstance(layer, Middleware):
                raise TypeError(f"middleware= takes mcpcore.Middleware instances, got {layer!r}")
        self.layers = tuple(layers)
        self.inner = inner
        self._requests: dict[str, Step | None] = {}
        self._notification_hooks = [h for layer in self.layers
                                    if (h := overridden(layer, "on_notification")) is not None]

    def request(self, method: str) -> Step | None:
        """The chain of ``method`` (``None`` when no layer hooks it)."""
        try:
            return self._requests[method]
        except KeyError:
            pass
        hooks = []
        family = HOOKS.get(method)
        for layer in self.layers:
            for name in ("on_request", family):
                hook = overridden(layer, name) if name is not None else None
                if hook is not None:
                    hooks.append(hook)
        step = _link(hooks, self.inner) if hooks else None
        if len(self._requests) < 256:  # methods reaching here are served ones, but keep it bounded
            self._requests[method] = step
        return step

    @property
    def hooks_notifications(self) -> bool:
        """Whether a layer hooks client notifications."""
        return bool(self._notification_hooks)

    def notification(self, handling: Step) -> Step:
        """The chain of a client notification around the transport's own ``handling``."""
        return _link(self._notification_hooks, handling)
