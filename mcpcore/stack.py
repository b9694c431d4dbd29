"""The app's layers, in the order a request meets them, and their lifecycle.

Every layer is a :class:`~mcpcore.layer.Layer`: the framework's first, then the user's
middleware, then the method. ``app.layers`` lists them as built; :class:`Stack` holds them.

====  ======================  =====================  =========================================================
 #    layer                   class                  what it does
====  ======================  =====================  =========================================================
 1    host and origin guard   ``HostOriginGuard``    a foreign ``Host`` or ``Origin`` is answered 403
 2    cors                    ``CorsPolicy``         preflights; CORS headers for allowed origins
 3    auth                    ``Authentication``     the bearer token becomes ``ctx.auth`` (401/403); the
                                                     authenticator is ``MCP_AUTH_MODE``'s or ``auth=``
 4    body limit              ``BodyLimit``          media types, 413 past the limit, valid JSON, its depth
 5    session or envelope     ``SessionOrEnvelope``  2025: the session's record, bound to the identity (404
                                                     when not the caller's); 2026-07-28: the ``_meta``
                                                     envelope; the request's Inbound from the one intake
 6    state                   ``TenantState``        ``ctx.state`` (tenant-scoped storage), the app's services
 7    event buffer            ``EventBuffering``     each SSE event of a resumable session stored before sent
 8    the user's middleware   ``Middleware``         ``McpApp(middleware=[A(), B()])``: A, then B
 9    the method              (the dispatcher)       visibility, scopes, arguments, dependencies, the handler
====  ======================  =====================  =========================================================

Layers 1-4 serve HTTP (``transports/http/door.py``); stdio has none of them, and the 2024
HTTP+SSE transport passes 1 and 3 too. 5-7 build and serve the request's context; the user's
layers see the request with its identity and session known, and their results pass back out
through the event buffer. Startup runs every layer's ``startup`` in this order, shutdown their
``shutdown`` in reverse.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .auth.base import Authenticator
from .auth.factory import app_authenticator
from .auth.host import HostIdentity
from .auth.verifier import TokenVerifier
from .config import Settings
from .errors import ConfigurationError
from .layer import Layer, LayerInfo, setup_context
from .middleware.base import Middleware
from .state_layer import TenantState
from .transports.buffering import EventBuffering
from .transports.http.door import Authentication, BodyLimit, CorsPolicy, HostOriginGuard
from .transports.http.eras import SessionOrEnvelope

if TYPE_CHECKING:
    from .auth.delegation import Delegation
    from .context import ContextServices
    from .sessions.events import EventBuffer
    from .storage.base import StorageProvider
    from .store_kinds import StoreKind

__all__ = ["AppState", "Stack", "authenticator_for", "delegation_for", "open_delegation", "open_layers",
           "setup_context"]

log = logging.getLogger("mcpcore.app")


class Stack:
    """The app's layers, outermost first: the framework's (built here from the settings, the
    authenticator and the stores), then the user's middleware (``McpApp(middleware=[...])``).

    Iterating gives every layer in order; the HTTP endpoint runs :attr:`doors`, then
    :attr:`body_limit` and :attr:`session_or_envelope`; each request's context is served by :attr:`state`
    and its stream by :attr:`events`; the method's dispatcher runs :attr:`middleware`.
    """

    def __init__(self, settings: Settings, authenticator: Authenticator | None, services: ContextServices,
                 storage: StorageProvider | None, events: EventBuffer | None,
                 middleware: Sequence[Middleware] = (), state_kind: StoreKind | None = None,
                 telemetry: Any = None) -> None:
        self.guard = HostOriginGuard(settings)
        self.cors = CorsPolicy(settings)
        self.auth = Authentication(authenticator, settings) if authenticator is not None else None
        self.body_limit = BodyLimit(settings)
        self.session_or_envelope = SessionOrEnvelope()
        self.state = TenantState(services, storage, state_kind, telemetry)
        self.events = EventBuffering(events, settings)
        self.middleware: list[Middleware] = list(middleware)

    @property
    def doors(self) -> tuple[HostOriginGuard | CorsPolicy | Authentication, ...]:
        """The layers the HTTP endpoint runs at the door, in order: those with something to do
        in this app (CORS only with allowed origins, auth only when the app has it)."""
        layers: list[HostOriginGuard | CorsPolicy | Authentication] = [self.guard]
        if self.cors.active:
            layers.append(self.cors)
        if self.auth is not None:
            layers.append(self.auth)
        return tuple(layers)

    @property
    def framework(self) -> tuple[Layer, ...]:
        """The framework's layers, in order."""
        auth = () if self.auth is None else (self.auth,)
        return (self.guard, self.cors, *auth, self.body_limit, self.session_or_envelope, self.state, self.events)

    def __iter__(self) -> Iterator[Layer]:
        yield from self.framework
        yield from self.middleware

    def describe(self) -> list[LayerInfo]:
        """Every layer as ``app.layers`` lists it (auth says ``off`` when the app has none)."""
        framework = [layer.info() for layer in self.framework]
        if self.auth is None:
            framework.insert(2, LayerInfo(Authentication.title, "framework", "off"))
        return [*framework, *(m.info() for m in self.middleware)]


class AppState:
    """``app.state`` (and ``ctx.app_state``): what ``setup`` opened for the app's lifetime, as
    attributes (``app.state.pool = await create_pool()``)."""

    def __repr__(self) -> str:
        return f"AppState({', '.join(sorted(vars(self)))})"


def authenticator_for(settings: Settings, given: TokenVerifier | Authenticator | HostIdentity | None,
                      ) -> Authenticator | None:
    """The app's authenticator (:func:`~mcpcore.auth.factory.app_authenticator`): ``auth=``
    when given (a ``TokenVerifier``, a whole ``Authenticator`` or a ``HostIdentity``), else the
    one ``MCP_AUTH_MODE`` names, with the host's user and DPoP when their settings say so.

    Raises:
        ConfigurationError: both ``auth=`` tokens and an ``MCP_AUTH_MODE`` other than ``none``.
    """
    return app_authenticator(settings, given)


def delegation_for(settings: Settings, given: Delegation | None) -> Delegation | None:
    """The app's delegated tokens: ``McpApp(delegation=...)`` when given, else RFC 8693 token
    exchange as ``MCP_TOKEN_EXCHANGE_*`` describe it, or ``None`` when unset.

    Raises:
        ConfigurationError: an audience of ``MCP_TOKEN_EXCHANGE_AUDIENCES`` not written
            ``name=audience``, or both ``delegation=`` and ``MCP_TOKEN_EXCHANGE_URL``.
    """
    if given is not None and settings.token_exchange_url:
        raise ConfigurationError("McpApp(delegation=...) replaces MCP_TOKEN_EXCHANGE_URL; unset one of them")
    if given is not None or not settings.token_exchange_url:
        return given
    from .auth.delegation import Delegation
    from .auth.token_exchange import TokenExchange

    audiences: dict[str, str] = {}
    for pair in settings.token_exchange_audiences:
        name, sep, audience = pair.partition("=")
        if not sep or not name.strip() or not audience.strip():
            raise ConfigurationError(f"MCP_TOKEN_EXCHANGE_AUDIENCES must be name=audience pairs, got {pair!r}")
        audiences[name.strip()] = audience.strip()
    return Delegation(TokenExchange.from_settings(settings), audiences)


async def open_delegation(stack: contextlib.AsyncExitStack, delegation: Delegation | None, redis: Any) -> None:
    """Start the app's delegated tokens (their cache in ``redis`` when the stores are there);
    they close when ``stack`` does."""
    if delegation is not None:
        await delegation.start(redis)
        stack.push_async_callback(delegation.close)


async def open_layers(stack: contextlib.AsyncExitStack, layers: Iterable[Layer], settings: Settings,
                      redis: Any) -> None:
    """Start every layer in order (their ``shutdown`` runs when ``stack`` closes, last first)."""
    for layer in layers:
        await layer.startup(settings, redis)
        stack.push_async_callback(layer.shutdown)
