"""The app's layers, in the order a request meets them, and their lifecycle.

A request passes the framework's layers first, then the user's middleware, then the method:

====  ==========================  ==============================================================
 1    host and origin guard       ``transports/guard.py``: a foreign ``Host`` or ``Origin`` is 403
 2    body limit                  ``transports/http/endpoint.py``: media types, 413 past the limit,
                                  JSON depth
 3    auth                        ``transports/authn.py`` + the app's authenticator (``jwt``,
                                  ``oauth``, ``introspection`` or your ``TokenVerifier``): 401/403
 4    session or envelope         2025: the session's record, bound to the identity (404 when it is
                                  not the caller's); 2026-07-28: the request's ``_meta`` envelope
 5    state                       ``ctx.state`` (tenant-scoped storage) and ``ctx.values``
 6    event buffer                each SSE event of a resumable session stored before it is sent
 7    the user's middleware       ``McpApp(middleware=[A(), B()])``: A, then B (A outermost)
 8    the method                  visibility, scopes, arguments, dependencies, the handler
====  ==========================  ==============================================================

Layers 1-3 run at the HTTP door (stdio has none of them); 4-6 build and serve the request's
context; the user's layers see the request with its identity and session known, and their
results pass back out through the event buffer.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .auth import create_authenticator
from .auth.base import Authenticator
from .auth.verifier import TokenVerifier, VerifierAuthenticator
from .config import Settings
from .errors import ConfigurationError
from .middleware.base import Middleware

__all__ = ["FRAMEWORK_LAYERS", "AppState", "Layer", "authenticator_for", "describe", "open_layers", "setup_context"]

log = logging.getLogger("mcpcore.app")


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer of the stack, for ``app.layers``."""

    name: str
    kind: str
    """``"framework"`` or ``"middleware"``."""
    where: str
    """The module (framework) or class (middleware) that is the layer."""


FRAMEWORK_LAYERS: tuple[Layer, ...] = (
    Layer("host and origin guard", "framework", "mcpcore.transports.guard"),
    Layer("body limit", "framework", "mcpcore.transports.http.endpoint"),
    Layer("auth", "framework", "mcpcore.transports.authn"),
    Layer("session or envelope", "framework", "mcpcore.transports.intake"),
    Layer("state", "framework", "mcpcore.context.state"),
    Layer("event buffer", "framework", "mcpcore.transports.exchange"),
)


def _qualified(obj: object) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def describe(middleware: Sequence[Middleware], authenticator: Authenticator | None = None) -> list[Layer]:
    """The whole stack, outermost first: the framework's layers (the auth layer names the
    authenticator in use, or says it is off), then the user's."""
    framework = [Layer(f.name, f.kind, (_qualified(getattr(authenticator, "verifier", authenticator))
                                        if authenticator is not None else "off")) if f.name == "auth" else f
                 for f in FRAMEWORK_LAYERS]
    return [*framework, *(Layer(type(m).__name__, "middleware", _qualified(m)) for m in middleware)]


class AppState:
    """``app.state`` (and ``ctx.app_state``): what ``setup`` opened for the app's lifetime, as
    attributes (``app.state.pool = await create_pool()``)."""

    def __repr__(self) -> str:
        return f"AppState({', '.join(sorted(vars(self)))})"


def authenticator_for(settings: Settings, given: TokenVerifier | Authenticator | None) -> Authenticator | None:
    """The app's authenticator: ``auth=`` when given (a ``TokenVerifier`` or a whole
    ``Authenticator``), else the one ``MCP_AUTH_MODE`` names.

    Raises:
        ConfigurationError: both ``auth=`` and an ``MCP_AUTH_MODE`` other than ``none``.
    """
    if given is None:
        return create_authenticator(settings)
    if settings.auth_mode != "none":
        raise ConfigurationError(f"McpApp(auth=...) replaces MCP_AUTH_MODE={settings.auth_mode}; unset one of them")
    if callable(getattr(given, "authenticate", None)) and hasattr(given, "start"):
        return given  # type: ignore[return-value]
    return VerifierAuthenticator(given)  # type: ignore[arg-type]


async def open_layers(stack: contextlib.AsyncExitStack, middleware: Sequence[Middleware], settings: Settings,
                      redis: Any) -> None:
    """Start every middleware layer (their ``shutdown`` runs when ``stack`` closes, last first)."""
    for layer in middleware:
        await layer.startup(settings, redis)
        stack.push_async_callback(layer.shutdown)


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
