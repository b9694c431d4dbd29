"""Outgoing credentials: what a request to another API carries on the caller's behalf.

Generated OpenAPI tools and the MCP proxy call other services for a caller. Which credential that
call carries is a policy, chosen per backend; none of them forwards the caller's
``Authorization`` header unless asked to in so many words (the MCP authorization spec forbids
token passthrough across audiences)::

    NoCredentials()                                   # the default: mcpcore adds nothing
    StaticHeader("X-Api-Key", env="BILLING_API_KEY")  # a secret from configuration, never logged
    DelegatedToken("billing")                         # RFC 8693 exchange per caller (token_for)
    CallerToken(audience="https://api.example")       # the caller's own token, opt-in, audience-checked

Each policy gives, for a :class:`~mcpcore.context.Context`, an ``httpx.Auth`` to pass to a
request (``await policy.auth(ctx)``; ``None``: add nothing, the client's own auth applies), and
``describe()`` says what it sends without the secret. :func:`credentials_from_config` reads the
one-line form settings use (``none``, ``header:NAME=env:VAR``, ``delegated:AUDIENCE``,
``caller:AUDIENCE``).

A policy that cannot send its credential raises :class:`CredentialFailed`, a tool error naming
the reason with a recovery hint, before any request leaves.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx

from . import _json
from .auth.claims import claim_strings
from .auth.delegation import DelegatedAuth, Delegation
from .errors import ConfigurationError, JsonRpcErrorCode, McpError

if TYPE_CHECKING:
    from .context import AuthInfo, Context

__all__ = ["CallerToken", "CredentialFailed", "CredentialPolicy", "DelegatedToken", "HeaderAuth", "NoCredentials",
           "StaticHeader", "credentials_from_config"]


class CredentialFailed(McpError):
    """The policy could not send its credential: a tool error naming why, with a recovery hint."""

    def __init__(self, reason: str, message: str, hint: str, *, code: int = JsonRpcErrorCode.Forbidden) -> None:
        super().__init__(code, message, {"reason": reason, "recovery": {"hint": hint}})


@runtime_checkable
class CredentialPolicy(Protocol):
    """What an outgoing request carries for a caller (see the module docstring)."""

    async def auth(self, ctx: Context | None) -> httpx.Auth | None:
        """An ``httpx.Auth`` for a request made on ``ctx``'s caller's behalf (``None``: none).

        Raises:
            CredentialFailed: the credential cannot be had (no caller token, a refused audience...).
        """
        ...

    def describe(self) -> str:
        """What is sent, for logs and lint (never the secret itself)."""
        ...


class HeaderAuth(httpx.Auth):
    """``httpx.Auth`` setting one header (its value is kept out of ``repr``)."""

    def __init__(self, name: str, value: str) -> None:
        self.name = name
        self._value = value

    def __repr__(self) -> str:
        return f"HeaderAuth({self.name!r}, <hidden>)"

    def header(self) -> tuple[str, str]:
        """The header's name and value (for a client that sets headers without an auth flow)."""
        return self.name, self._value

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self.name] = self._value
        yield request


class _Strip(httpx.Auth):
    """Removes ``Authorization`` a client's default headers might carry (never the caller's)."""

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers.pop("Authorization", None)
        yield request


class NoCredentials:
    """The default: the request carries no credential from mcpcore.

    Args:
        strip: also remove an ``Authorization`` header the outgoing client sets by default
            (``False``: the client's own ``auth=`` and headers apply, as configured).
    """

    def __init__(self, *, strip: bool = False) -> None:
        self.strip = strip

    def __repr__(self) -> str:
        return "NoCredentials()"

    async def auth(self, ctx: Context | None) -> httpx.Auth | None:
        """No auth (or one removing ``Authorization`` with ``strip=True``)."""
        return _Strip() if self.strip else None

    def describe(self) -> str:
        """``none``."""
        return "none"


class StaticHeader:
    """One header with a value from configuration: the value itself or an environment variable.

    Args:
        name: the header (``Authorization``, ``X-Api-Key``).
        value: its value (prefer ``env``: the value then lives only in the environment).
        env: the environment variable holding it, read at each call (a rotated secret applies).
        prefix: put before the value (``"Bearer "``, ``"token "``).

    The value never appears in ``repr``, ``describe()`` or a log line.

    Raises:
        ConfigurationError: neither or both of ``value`` and ``env``, or a bad header name.
    """

    def __init__(self, name: str = "Authorization", value: str | None = None, *, env: str | None = None,
                 prefix: str = "") -> None:
        if (value is None) == (env is None):
            raise ConfigurationError("StaticHeader needs exactly one of value= and env=")
        if not name or not name.isascii() or any(c in name for c in " :\r\n\t"):
            raise ConfigurationError(f"StaticHeader: {name!r} is not a header name")
        self.name = name
        self.env = env
        self.prefix = prefix
        self._value = value

    def __repr__(self) -> str:
        source = f"env={self.env!r}" if self.env else "value=<hidden>"
        return f"StaticHeader({self.name!r}, {source})"

    def _resolve(self) -> str:
        if self._value is not None:
            return self.prefix + self._value
        assert self.env is not None
        found = os.environ.get(self.env)
        if not found:
            raise CredentialFailed("credential_missing", f"The {self.name} header for this API comes from the "
                                   f"environment variable {self.env}, which is not set.",
                                   f"Set {self.env} in the server's environment.", code=JsonRpcErrorCode.InternalError)
        return self.prefix + found

    async def auth(self, ctx: Context | None) -> httpx.Auth:
        """The header, with the value read now."""
        return HeaderAuth(self.name, self._resolve())

    def describe(self) -> str:
        """``header NAME (from env VAR)`` or ``header NAME (configured value)``."""
        return f"header {self.name} ({f'from env {self.env}' if self.env else 'configured value'})"


class DelegatedToken:
    """A token for a named downstream audience, obtained per caller by the app's
    :class:`~mcpcore.auth.delegation.Delegation` (RFC 8693 token exchange; cached; a 401 drops it
    and retries once with a fresh one).

    Args:
        audience: the audience's name in ``Delegation(audiences=...)``.
        scopes: the scopes asked for (default: the audience's).
    """

    def __init__(self, audience: str, *, scopes: Sequence[str] | None = None) -> None:
        self.audience = audience
        self.scopes = tuple(scopes) if scopes is not None else None

    def __repr__(self) -> str:
        return f"DelegatedToken({self.audience!r})"

    async def auth(self, ctx: Context | None) -> httpx.Auth:
        """A :class:`~mcpcore.auth.delegation.DelegatedAuth` for ``ctx``'s caller.

        Raises:
            DelegationFailed: no delegation configured, an unknown audience, no caller token.
        """
        from .auth.delegation import DelegationFailed

        found = getattr(ctx._req.services, "delegation", None) if ctx is not None else None
        if not isinstance(found, Delegation):
            raise DelegationFailed("delegation_not_configured", "This server has no downstream token source "
                                   "configured.", "Pass McpApp(delegation=...) or set MCP_TOKEN_EXCHANGE_URL.",
                                   code=JsonRpcErrorCode.InternalError)
        found.audience(self.audience)  # an unknown audience fails before any request
        if ctx is None or ctx.auth is None or ctx.auth.token is None:
            raise DelegationFailed.no_token(self.audience)
        return DelegatedAuth(found, ctx.auth, self.audience, self.scopes)

    def describe(self) -> str:
        """``delegated token for AUDIENCE``."""
        return f"delegated token for {self.audience}"


def _jwt_claims(token: str) -> dict[str, Any] | None:
    """The payload of a compact JWS, unverified (the inbound authenticator verified it), or None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = _json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    return payload if isinstance(payload, dict) else None


def _same(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


class CallerToken:
    """The caller's own access token, forwarded: only for a backend that accepts the very
    audience the token was issued for (an API behind the same authorization server and resource).

    The token's ``aud`` (read from the token when it is a JWT, else from the verified claims,
    e.g. introspection's) must name ``audience``; a token without an audience, for another one,
    or bound to a key (DPoP ``cnf``: the backend could not check the proof) is refused, and no
    request leaves. Host-app identities carry no token and are refused too.

    Args:
        audience: the audience the backend accepts (its resource URI or ``aud`` value).
    """

    def __init__(self, audience: str) -> None:
        if not audience:
            raise ConfigurationError("CallerToken needs the audience the backend accepts (audience=...)")
        self.audience = audience

    def __repr__(self) -> str:
        return f"CallerToken(audience={self.audience!r})"

    def check(self, caller: AuthInfo | None) -> str:
        """The caller's token when it may be forwarded to this audience.

        Raises:
            CredentialFailed: no token, or one not for this audience, or a sender-constrained one.
        """
        if caller is None or not caller.token:
            raise CredentialFailed("credential_no_token", "This API is called with the caller's own token, and the "
                                   "caller presented none.", "Call this tool with an OAuth access token.",
                                   code=JsonRpcErrorCode.Unauthorized)
        claims = _jwt_claims(caller.token) or caller.claims
        if claims.get("cnf"):
            raise CredentialFailed("credential_bound_token", "The caller's token is bound to the caller's key "
                                   "(DPoP), so it cannot be forwarded.",
                                   "Configure a delegated token (DelegatedToken) for this API instead.")
        if not any(_same(a, self.audience) for a in claim_strings(claims.get("aud"))):
            raise CredentialFailed("credential_wrong_audience", "The caller's token is not issued for this API's "
                                   f"audience ({self.audience}), so it is not forwarded.",
                                   "Use a delegated token (DelegatedToken) for this API, or have the authorization "
                                   "server issue tokens whose aud includes it.")
        return caller.token

    async def auth(self, ctx: Context | None) -> httpx.Auth:
        """``Authorization: Bearer <the caller's token>`` after :meth:`check`."""
        return HeaderAuth("Authorization", "Bearer " + self.check(ctx.auth if ctx is not None else None))

    def describe(self) -> str:
        """``the caller's token (audience A)``."""
        return f"the caller's token (audience {self.audience})"


def credentials_from_config(text: str | None) -> NoCredentials | StaticHeader | DelegatedToken | CallerToken:
    """A policy from its one-line configuration form.

    ``none`` (or empty); ``header:NAME=env:VAR`` (optionally ``header:NAME=PREFIX env:VAR``, e.g.
    ``header:Authorization=Bearer env:API_TOKEN``); ``delegated:AUDIENCE_NAME``;
    ``caller:AUDIENCE``. A literal secret is not accepted here: configuration names the variable.

    Raises:
        ConfigurationError: any other form.
    """
    text = (text or "").strip()
    if text in ("", "none"):
        return NoCredentials()
    kind, _, rest = text.partition(":")
    rest = rest.strip()
    if kind == "delegated" and rest:
        return DelegatedToken(rest)
    if kind == "caller" and rest:
        return CallerToken(rest)
    if kind == "header":
        name, _, value = rest.partition("=")
        prefix, _, var = value.rpartition("env:")
        if name.strip() and var.strip() and _ == "env:":
            return StaticHeader(name.strip(), env=var.strip(), prefix=prefix.lstrip())
    raise ConfigurationError(f"credentials of the form {kind[:20]!r}...: expected none, header:NAME=env:VAR, "
                             "delegated:AUDIENCE or caller:AUDIENCE (the value itself is not repeated here)")

