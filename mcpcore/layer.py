"""``Layer``: what every layer of an app's stack is, the framework's own and the user's middleware.

A request meets the layers in one order (``app.layers`` lists them, :mod:`mcpcore.stack` says
what each does). Every layer has a name for that listing and a lifecycle: ``startup`` runs once
before the app serves, in stack order, and ``shutdown`` once when it stops, in reverse. What a
layer does to a request depends on the stage it serves:

- the HTTP door (before a byte of the body is read): a synchronous ``door(headers, send)`` hook
  that returns ``None`` to let the request pass, or the awaitable of what it does to it (answer
  it, or give the ``send`` the rest of the request uses): the host and origin guard, CORS, auth;
- the body (``BodyLimit``), then the message (``SessionOrEnvelope`` turns it into the request's
  :class:`~mcpcore.context.Inbound`; ``TenantState`` and ``EventBuffering`` serve that request's
  context and its stream);
- the method: :class:`~mcpcore.Middleware` hooks around each method, the user's layers.

The door hooks run one after another in the endpoint's coroutine, so a layer with nothing to do
for a request costs a call, not a nested coroutine.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .config import Settings

__all__ = ["Layer", "LayerInfo", "setup_context"]


@dataclass(frozen=True, slots=True)
class LayerInfo:
    """One layer of the stack as ``app.layers`` lists it."""

    name: str
    kind: str
    """``"framework"`` or ``"middleware"``."""
    where: str
    """What serves the layer: its class (for auth, the verifier in use)."""


class Layer:
    """The base of every layer: a name, a kind, a start and a stop."""

    title: ClassVar[str] = ""
    """The name ``app.layers`` gives the layer (the class name when empty)."""
    kind: ClassVar[str] = "framework"

    def info(self) -> LayerInfo:
        """How ``app.layers`` lists this layer."""
        return LayerInfo(self.title or type(self).__name__, self.kind, self.where())

    def where(self) -> str:
        """The layer's class, module-qualified."""
        return qualified(self)

    async def startup(self, settings: Settings, redis: Any = None) -> None:
        """Called once when the app starts, before it serves (``redis``: the app's shared
        Redis client when it has one)."""

    async def shutdown(self) -> None:
        """Called once when the app stops."""


def qualified(obj: object) -> str:
    """``module.Class`` of ``obj``."""
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def setup_context(setup: Callable[[Any], Any], app: Any) -> contextlib.AbstractAsyncContextManager[Any]:
    """``setup`` as a context manager: an ``async def setup(app)`` runs on entry; an async
    generator runs to its ``yield`` on entry and on from there at shutdown (closing what it
    opened, as FastAPI's lifespan does)."""
    if inspect.isasyncgenfunction(setup):
        return contextlib.asynccontextmanager(setup)(app)

    @contextlib.asynccontextmanager
    async def once() -> AsyncIterator[None]:
        result: Awaitable[Any] | None = setup(app)
        if result is not None:
            await result
        yield

    return once()
