"""The user's middleware layers put together: one chain per method, built once per app.

A method's chain holds, layer by layer (the first layer outermost), the layer's general hook and
then its method hook, each only when the layer's class overrides it. A method no layer hooks
has no chain at all, so it is served exactly as without middleware.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import McpError, MethodError, classify
from ..middleware.base import HOOKS, Call, CallNext, Middleware, overridden

if TYPE_CHECKING:
    from .core import Handler, ServerCore
    from .invoke import Pipeline

__all__ = ["Layers", "Step", "tools_call_step"]

log = logging.getLogger("mcpcore.server")

Step = Callable[[Call], Awaitable[Any]]


def _link(hooks: Sequence[Callable[[Call, CallNext], Awaitable[Any]]], inner: Step) -> Step:
    step = inner
    for hook in reversed(hooks):
        step = _bound(hook, step)
    return step


def _bound(hook: Callable[[Call, CallNext], Awaitable[Any]], rest: Step) -> Step:
    """``hook`` bound to the rest of its chain (what it receives as ``call_next``): a closure,
    which a call reaches without the ``__call__`` lookup an object would cost."""
    def step(call: Call) -> Awaitable[Any]:
        return hook(call, rest)
    return step


class Layers:
    """The app's middleware (``McpApp(middleware=[...])``) around each of ``methods``
    (``inner(method)``: the method itself, as the innermost layer calls it)."""

    def __init__(self, layers: Sequence[Middleware], inner: Callable[[str], Step], methods: Iterable[str]) -> None:
        for layer in layers:
            if not isinstance(layer, Middleware):
                raise TypeError(f"middleware= takes mcpcore.Middleware instances, got {layer!r}")
        self.layers = tuple(layers)
        self.steps: dict[str, Step] = {}
        """The chain of every method some layer hooks."""
        for method in methods:
            hooks = [hook for layer in self.layers for name in ("on_request", HOOKS.get(method))
                     if name is not None and (hook := overridden(layer, name)) is not None]
            if hooks:
                self.steps[method] = _link(hooks, inner(method))
        self._notification_hooks = [h for layer in self.layers
                                    if (h := overridden(layer, "on_notification")) is not None]

    def request(self, method: str) -> Step | None:
        """The chain of ``method`` (``None`` when no layer hooks it)."""
        return self.steps.get(method)

    @property
    def hooks_notifications(self) -> bool:
        """Whether a layer hooks client notifications."""
        return bool(self._notification_hooks)

    def notification(self, handling: Step) -> Step:
        """The chain of a client notification around the transport's own ``handling``."""
        return _link(self._notification_hooks, handling)


def tools_call_step(handler: Handler, core: ServerCore, with_deps: dict[str, Pipeline[Any] | None],
                    learn: Callable[[str], None]) -> Step:
    """``tools/call`` itself under middleware: what it raises leaves as a
    :class:`~mcpcore.errors.MethodError`, so the layers around it cannot make the method's own
    refusal (an unknown tool, a missing scope, ``-32021``, a store outage) the tool's ``isError``
    result. A failure that is no ``McpError`` is logged here and leaves as its JSON-RPC error.

    A plain tool with dependencies seen before (``with_deps``, filled by ``learn``) is invoked
    here as :func:`~mcpcore.server.invoke.invoke` would, without telemetry: its scopes checked,
    its arguments validated (a bad one is the tool's error result), then its pipeline's
    dependency steps (``rest``)."""

    async def method(call: Call) -> Any:
        req = call._req
        try:
            params = call.params
            name = params.get("name")
            pipe = with_deps.get(name) if type(name) is str else None
            if pipe is not None and core.telemetry is None:
                d = pipe.d
                if d.auth:
                    core.check_scopes(d.auth, req)
                try:
                    validated = pipe.validate(params.get("arguments"))
                except McpError as bad:
                    return pipe.family.failed(d, bad, req)
                return await pipe.rest(core, validated, req, name)  # type: ignore[arg-type]
            result = await handler(core, params, req)
            if type(name) is str and name not in with_deps:
                learn(name)
            return result
        except MethodError:
            raise
        except McpError as exc:
            raise MethodError.of(exc) from exc
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("Unhandled error in tools/call", exc_info=exc, extra={"fields": {"requestId": req.request_id}})
            raise MethodError.of(classify(exc)) from exc

    return method
