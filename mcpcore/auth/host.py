"""``HostIdentity``: the caller is the user the host app already authenticated.

Mounted into an app that authenticates its users itself (Starlette's ``AuthenticationMiddleware``,
an API-key or session middleware), mcpcore takes the caller from the ASGI scope the host filled
instead of reading a token::

    app = FastAPI(middleware=[Middleware(AuthenticationMiddleware, backend=ApiKeys())])
    app.mount("/mcp", McpApp("notes", auth=HostIdentity(tenant="acme")))

By default the caller is Starlette's ``scope["user"]`` when ``user.is_authenticated``: its
``identity`` (else ``display_name``) is the subject, ``scope["auth"].scopes`` the scopes, its
``tenant_id`` attribute (a string) the tenant, else ``tenant=``. Give ``identify=`` to read
anything else (``scope["state"]``, a header a gateway set): a function of the scope, sync or
async, returning a :class:`Caller` (or an :class:`~mcpcore.context.AuthInfo`), or ``None`` when
the host did not authenticate the request.

The result is ``ctx.auth`` exactly as a verified token's is, so tenants, ``auth=[...]`` scopes,
``visible_to``, 2025 session binding, rate limits and tasks per identity all read it. A request
the host did not authenticate is verified by ``tokens=`` (a :class:`~mcpcore.auth.TokenVerifier`
or the ``MCP_AUTH_MODE`` authenticator) when the app accepts both; else it is answered 401 as in
the token modes. ``identify`` may raise :class:`~mcpcore.auth.AuthError` for a precise answer
(403 for a user the host knows but this server refuses); any other exception, and a value that
is not an identity, is logged and answered 503.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..asgi_types import Scope
from ..context import AuthInfo
from .base import Authenticator, authenticate_scope
from .claims import CLIENT_ID_MAX_LENGTH, is_valid_tenant_id
from .errors import AuthError

__all__ = ["Caller", "HostIdentity", "starlette_caller"]

log = logging.getLogger("mcpcore.auth")
MAX_REMEMBERED = 10_000
"""Identities of Starlette users kept for their next request (all dropped when full)."""

Identify = Callable[[Scope], "Caller | AuthInfo | Awaitable[Caller | AuthInfo | None] | None"]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who the host app says is calling.

    Args:
        subject: the user's stable id (``ctx.auth.subject``).
        tenant_id: the tenant whose ``ctx.state`` the user sees; ``None`` makes ``ctx.state``
            refuse (as for a token without ``tid``).
        scopes: what the user may do (``@tool(auth=[...])``, ``visible_to``).
        client_id: the application calling on the user's behalf (``ctx.auth.client_id``).
        claims: anything else handlers should read (``ctx.auth.claims``).
    """

    subject: str
    tenant_id: str | None = None
    scopes: Sequence[str] = ()
    client_id: str = "host"
    claims: Mapping[str, Any] = field(default_factory=dict)


def starlette_caller(scope: Scope, tenant: str | None = None) -> Caller | None:
    """The caller Starlette's ``AuthenticationMiddleware`` put in ``scope`` (``None`` when it
    did not authenticate the request)."""
    user = scope.get("user")
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    try:
        subject = user.identity
    except (AttributeError, NotImplementedError):
        subject = getattr(user, "display_name", None)
    own = getattr(user, "tenant_id", None)
    credentials = scope.get("auth")
    scopes = getattr(credentials, "scopes", None) or ()
    return Caller(subject, own if isinstance(own, str) else tenant, scopes)


class HostIdentity:
    """An authenticator taking the caller from the host app (see the module docstring).

    Args:
        identify: ``scope -> Caller | AuthInfo | None`` (sync or async); default
            :func:`starlette_caller`.
        tenant: the tenant of a Starlette user that names none (the default ``identify`` only).
        tokens: what verifies a request the host did not authenticate (a ``TokenVerifier`` or an
            ``Authenticator``); without it such a request is 401. With ``McpApp(auth=...)``, the
            ``MCP_AUTH_MODE`` authenticator is used when this is not given.
    """

    def __init__(self, identify: Identify | None = None, *, tenant: str | None = None,
                 tokens: Any = None) -> None:
        if identify is not None and not callable(identify):
            raise TypeError(f"HostIdentity(identify=...) takes a function of the ASGI scope, got {identify!r}")
        if tenant is not None and not is_valid_tenant_id(tenant):
            raise ValueError(f"HostIdentity(tenant=...) is not a valid tenant id: {tenant!r} (letters, digits, "
                             "'.', '_', '-', at most 128)")
        self.identify = identify
        self.tenant = tenant
        self._async = identify is not None and (inspect.iscoroutinefunction(identify) or
                                                inspect.iscoroutinefunction(type(identify).__call__))
        self.tokens: Authenticator | None = None
        self._seen: dict[tuple[Any, Any], tuple[list[str], AuthInfo]] = {}
        self._plain: set[type] = set()
        self._simple_seen: dict[str, tuple[Any, list[str], AuthInfo]] = {}
        if tokens is not None:
            self.use_tokens(tokens)

    def use_tokens(self, tokens: Any) -> None:
        """Verify the requests the host did not authenticate with ``tokens`` (a ``TokenVerifier``
        or an ``Authenticator``)."""
        from .verifier import VerifierAuthenticator

        is_authenticator = callable(getattr(tokens, "authenticate", None)) and hasattr(tokens, "start")
        self.tokens = tokens if is_authenticator else VerifierAuthenticator(tokens)

    @property
    def mode(self) -> str:
        """``host`` alone; with tokens, the token mode (its metadata and challenges are the app's)."""
        return "host" if self.tokens is None else self.tokens.mode

    @property
    def verifier(self) -> object:
        """What ``app.layers`` names for the auth layer."""
        return self.identify or self

    def __repr__(self) -> str:
        return f"HostIdentity(identify={self.identify!r}, tenant={self.tenant!r}, tokens={self.tokens!r})"

    def share(self, redis: Any) -> None:
        """Give the token authenticator the app's shared Redis client (its DPoP replay cache)."""
        share = getattr(self.tokens, "share", None)
        if share is not None:
            share(redis)

    async def start(self) -> None:
        """Start the token authenticator, if any."""
        if self.tokens is not None:
            await self.tokens.start()

    async def close(self) -> None:
        """Close the token authenticator, if any."""
        if self.tokens is not None:
            await self.tokens.close()

    @property
    def identify_now(self) -> Callable[[Scope], AuthInfo | None] | None:
        """For the door: the host's caller without waiting (``None`` when the host did not
        authenticate the request: then :meth:`authenticate_tokens`), or, when ``identify`` is
        async, no such shortcut (``None``: then :meth:`authenticate_request`)."""
        if self._async:
            return None
        return self._from_starlette if self.identify is None else self._from_function

    @property
    def door_shortcut_ready(self) -> bool:
        """Whether :meth:`door_shortcut` applies (the default, Starlette's user)."""
        return self.identify is None

    def _from_function(self, scope: Scope) -> AuthInfo | None:
        try:
            found = self.identify(scope)  # type: ignore[misc]
        except AuthError:
            raise
        except Exception:
            log.warning("HostIdentity's identify failed; answering 503", exc_info=True)
            raise AuthError.unavailable() from None
        return None if found is None else _identity(found)

    def door_shortcut(self, fallback: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """For the HTTP door (``door(headers, send)``): a user of Starlette's ``SimpleUser`` kind
        seen before (same username, ``tenant_id`` and scopes) passes with the identity built for
        it then, in this one call; anything else goes to ``fallback``, the auth layer's own door."""
        seen = self._simple_seen
        simple = self._plain

        def door(headers: Any, send: Any) -> Any:
            scope = headers.scope
            try:
                user = scope["user"]
                if type(user) in simple:  # its identity is its username, its tenant_id and the scopes
                    hit = seen[user.username]
                    if hit[0] == getattr(user, "tenant_id", None) and hit[1] == scope["auth"].scopes:
                        headers.auth = hit[2]
                        return None
            except Exception:  # not seen yet, or not Starlette's shape: the long way
                pass
            return fallback(headers, send)

        return door

    def _from_starlette(self, scope: Scope) -> AuthInfo | None:
        user: Any = scope.get("user")
        try:  # a user seen before, whose identity was built once
            if not user.is_authenticated:
                return None
            hit = self._seen.get((user.identity, getattr(user, "tenant_id", None)))
            if hit is not None and hit[0] == scope["auth"].scopes:
                return hit[1]
        except Exception:  # any other kind of user or credentials takes the long way
            pass
        return self._remember(scope)

    def _remember(self, scope: Scope) -> AuthInfo | None:
        """The Starlette user's identity, kept for its next request when its parts can be a key."""
        try:
            found = starlette_caller(scope, self.tenant)
        except Exception:
            log.warning("HostIdentity could not read the host's user; answering 503", exc_info=True)
            raise AuthError.unavailable() from None
        if found is None:
            return None
        info = _identity(found)
        user: Any = scope["user"]
        try:
            key = (user.identity, getattr(user, "tenant_id", None))
            hash(key)
            scopes = list(scope["auth"].scopes)
        except Exception:
            return info  # not Starlette's shape: built every time
        if len(self._seen) >= MAX_REMEMBERED:
            self._seen.clear()
            self._simple_seen.clear()
        self._seen[key] = (scopes, info)
        if _plain_user(type(user)):
            self._plain.add(type(user))
            self._simple_seen[user.username] = (key[1], scopes, info)
        return info

    async def authenticate_request(self, scope: Scope) -> AuthInfo:
        """The host's caller, else the token's, else a 401."""
        now = self.identify_now
        if now is not None:
            info = now(scope)
        else:
            try:
                found = self.identify(scope)  # type: ignore[misc]
                if inspect.isawaitable(found):
                    found = await found
            except AuthError:
                raise
            except Exception:
                log.warning("HostIdentity's identify failed; answering 503", exc_info=True)
                raise AuthError.unavailable() from None
            info = None if found is None else _identity(found)
        return info if info is not None else await self.authenticate_tokens(scope)

    async def authenticate_tokens(self, scope: Scope) -> AuthInfo:
        """A request the host did not authenticate: its token's caller, else 401."""
        if self.tokens is None:
            raise AuthError.missing()
        return await authenticate_scope(self.tokens, scope)

    async def authenticate(self, authorization: str | None) -> AuthInfo:
        """A request known only by its ``Authorization`` header: the token's caller, else 401."""
        if self.tokens is None:
            raise AuthError.missing()
        return await self.tokens.authenticate(authorization)


def _plain_user(cls: type) -> bool:
    """Whether ``cls`` is Starlette's ``SimpleUser`` or a subclass keeping its ``is_authenticated``
    (always true) and ``identity`` (its ``username``)."""
    from starlette.authentication import SimpleUser

    return issubclass(cls, SimpleUser) and cls.is_authenticated is SimpleUser.is_authenticated and \
        cls.identity is SimpleUser.identity


def _identity(found: Any) -> AuthInfo:
    """``ctx.auth`` of what ``identify`` returned.

    Raises:
        AuthError: 503 when it is not a usable identity (a bug of the host app's, not the caller's).
    """
    if isinstance(found, AuthInfo):
        return found
    if isinstance(found, Caller):
        problem = _problem(found)
        if problem is None:
            claims = {**found.claims, "sub": found.subject}
            if found.tenant_id is not None:
                claims["tid"] = found.tenant_id
            return AuthInfo(client_id=found.client_id, scopes=tuple(found.scopes), subject=found.subject,
                            tenant_id=found.tenant_id, claims=claims)
    else:
        problem = f"identify returned {type(found).__name__}, not a Caller, an AuthInfo or None"
    log.error("HostIdentity refused the host's caller: %s", problem)
    raise AuthError.unavailable()


def _problem(caller: Caller) -> str | None:
    if not isinstance(caller.subject, str) or not caller.subject.strip():
        return "its subject is empty (an empty subject would be everyone's)"
    if caller.tenant_id is not None and not is_valid_tenant_id(caller.tenant_id):
        return f"its tenant id {caller.tenant_id!r} is not valid (letters, digits, '.', '_', '-', at most 128)"
    if not isinstance(caller.client_id, str) or not caller.client_id or len(caller.client_id) > CLIENT_ID_MAX_LENGTH:
        return "its client id is empty or too long"
    if isinstance(caller.scopes, str) or not all(isinstance(s, str) for s in caller.scopes):
        return "its scopes are not a list of strings"
    return None
