"""Delegated calls downstream: a token for a named audience, on the caller's behalf.

A tool that calls another API for its caller must not forward the caller's token (the MCP
authorization spec forbids token passthrough). It asks for a token that audience accepts::

    app = McpApp("reports", delegation=Delegation(
        TokenExchange("https://as.example/token", client_id="reports-mcp", client_secret=secret),
        audiences={"billing": Audience("https://billing.example", scopes=("invoices:read",))}))

    @tool
    async def invoices(auth: Annotated[httpx.Auth, Depends(delegated_auth("billing"))]) -> list[dict]:
        async with httpx.AsyncClient(auth=auth) as http:
            return (await http.get("https://billing.example/invoices")).json()

- :func:`delegated_token` (a dependency giving a :class:`DownstreamToken`), :func:`delegated_auth`
  (an ``httpx.Auth`` for outgoing clients: it sets ``Authorization`` to the delegated token and,
  when the API answers 401, drops it and retries once with a fresh one) and :func:`token_for`.
- Where the token comes from is the app's :class:`CredentialSource`: RFC 8693 token exchange
  (:class:`~mcpcore.auth.token_exchange.TokenExchange`) today; an audience may name its own.
- Tokens are cached per caller (tenant, client, subject), audience and scopes until shortly
  before they expire (``margin``, at most half their life) and never past the caller's own
  token; in Redis when the app's stores are (every instance reuses one exchange), else here.
  Concurrent requests for one key share one exchange.
- A failure is a tool error (:class:`DelegationFailed`: ``data.reason`` and
  ``data.recovery.hint``); no request goes downstream without a delegated token.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import anyio
import httpx

from .. import _json
from ..context import AuthInfo, Context
from ..errors import JsonRpcErrorCode, McpError
from ..redis_client import UNAVAILABLE

__all__ = ["Audience", "CredentialSource", "DelegatedAuth", "Delegation", "DelegationFailed", "DownstreamToken",
           "delegated_auth", "delegated_token", "token_for"]

log = logging.getLogger("mcpcore.auth")


@dataclass(frozen=True, slots=True)
class Audience:
    """A downstream API tokens are obtained for.

    Args:
        audience: its RFC 8693 ``audience`` (a logical name or URI the authorization server knows).
        resource: its RFC 8707 ``resource`` URI, when the server wants that instead (or too).
        scopes: the scopes asked for by default.
        source: where its tokens come from, when not the app's default source.
        name: set from the key it is registered under.
    """

    audience: str | None = None
    resource: str | None = None
    scopes: tuple[str, ...] = ()
    source: CredentialSource | None = field(default=None, compare=False)
    name: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.scopes, str):
            raise TypeError("Audience(scopes=...) takes a sequence of scope names, not a string")
        object.__setattr__(self, "scopes", tuple(self.scopes))


@dataclass(frozen=True, slots=True)
class DownstreamToken:
    """A token obtained for a downstream audience (never printed whole)."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    """Wall-clock seconds when it expires (``None``: not said)."""
    scopes: tuple[str, ...] = ()
    issued_token_type: str | None = None

    @property
    def authorization(self) -> str:
        """The ``Authorization`` header value: ``Bearer <token>``.

        Raises:
            DelegationFailed: a token type other than Bearer (a DPoP-bound one needs a proof).
        """
        if self.token_type.lower() not in ("bearer", "n_a"):
            raise DelegationFailed("unsupported_token", f"The delegated token is of type {self.token_type!r}, "
                                   "which needs more than an Authorization header.",
                                   "Configure the authorization server to issue Bearer tokens for this audience.")
        return f"Bearer {self.access_token}"


class CredentialSource(Protocol):
    """Where delegated tokens come from (token exchange now; the upstream token an
    authorization-server facade holds, later). May also have ``start()`` and ``close()``."""

    async def obtain(self, caller: AuthInfo, target: Audience) -> DownstreamToken:
        """A token for ``target`` on ``caller``'s behalf.

        Raises:
            DelegationFailed: none can be had.
        """
        ...


class DelegationFailed(McpError):
    """No delegated token could be had: a tool error naming why, with a recovery hint."""

    def __init__(self, reason: str, message: str, hint: str, *, code: int = JsonRpcErrorCode.Forbidden,
                 retryable: bool = False) -> None:
        data: dict[str, Any] = {"reason": reason, "recovery": {"hint": hint}}
        if retryable:
            data["retryable"] = True
        super().__init__(code, message, data)

    @classmethod
    def no_token(cls, audience: str) -> DelegationFailed:
        """The caller holds no token to exchange (host identity, or no auth)."""
        return cls("delegation_no_token", f"No token for {audience!r}: the caller did not present an access "
                   "token this server could exchange.",
                   "Call this tool with an OAuth access token (the Authorization header), not a host session.",
                   code=JsonRpcErrorCode.Unauthorized)

    @classmethod
    def refused(cls, audience: str, error: str) -> DelegationFailed:
        """The authorization server refused the exchange (its ``error`` code)."""
        code = error if error.replace("_", "").isalnum() and len(error) <= 64 else "refused"
        return cls("delegation_refused", f"The authorization server refused a token for {audience!r} ({code}).",
                   "Sign in again for a fresh token, or ask for scopes the authorization server grants for this "
                   "audience; if it persists, the server's token exchange client is not allowed this audience.")

    @classmethod
    def unavailable(cls, audience: str) -> DelegationFailed:
        """The token endpoint could not answer."""
        return cls("delegation_unavailable", f"The token exchange for {audience!r} is unavailable.",
                   "Retry in a few seconds.", code=JsonRpcErrorCode.ServiceUnavailable, retryable=True)


def _key(caller: AuthInfo, target: Audience, scopes: tuple[str, ...]) -> str:
    parts = (caller.tenant_id or "", caller.client_id, caller.subject or "", target.name, target.audience or "",
             target.resource or "", " ".join(sorted(scopes)))
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _dump(token: DownstreamToken) -> bytes:
    return _json.dumps({"access_token": token.access_token, "token_type": token.token_type,
                        "expires_at": token.expires_at, "scopes": list(token.scopes),
                        "issued_token_type": token.issued_token_type})


def _load(raw: bytes) -> DownstreamToken | None:
    try:
        d = _json.loads(raw)
        return DownstreamToken(d["access_token"], d["token_type"], d["expires_at"], tuple(d["scopes"]),
                               d["issued_token_type"])
    except (ValueError, KeyError, TypeError):
        return None


class Delegation:
    """The app's delegated tokens (``McpApp(delegation=...)``; see the module docstring).

    Args:
        source: where tokens come from (a :class:`CredentialSource`).
        audiences: ``{name: Audience | audience string}``.
        margin: seconds before expiry a cached token stops being used (at most half its life).
        max_entries: tokens this process keeps without Redis.
    """

    def __init__(self, source: CredentialSource, audiences: Mapping[str, Audience | str], *, margin: float = 30.0,
                 max_entries: int = 10_000) -> None:
        self.source = source
        self.audiences = {name: replace(a if isinstance(a, Audience) else Audience(audience=a), name=name)
                          for name, a in audiences.items()}
        self.margin = margin
        self.max_entries = max_entries
        self.redis: Any = None
        self.prefix = "mcpcore:delegated:"
        self._memory: dict[str, tuple[float, DownstreamToken]] = {}
        self._inflight: dict[str, anyio.Event] = {}

    def __repr__(self) -> str:
        return f"Delegation({self.source!r}, audiences={sorted(self.audiences)})"

    async def start(self, redis: Any = None) -> None:
        """Use the app's Redis for the cache (when it has one) and start the sources."""
        self.redis = redis
        for source in {id(s): s for s in (self.source, *(a.source for a in self.audiences.values())) if s}.values():
            start: Any = getattr(source, "start", None)
            if callable(start):
                await start()

    async def close(self) -> None:
        """Close the sources."""
        for source in {id(s): s for s in (self.source, *(a.source for a in self.audiences.values())) if s}.values():
            close: Any = getattr(source, "close", None)
            if callable(close):
                await close()

    def audience(self, name: str) -> Audience:
        """The audience registered as ``name``.

        Raises:
            DelegationFailed: no such audience (a server configuration error, named in the message).
        """
        target = self.audiences.get(name)
        if target is None:
            raise DelegationFailed("delegation_unknown_audience",
                                   f"No downstream audience {name!r} is configured (known: "
                                   f"{', '.join(sorted(self.audiences)) or 'none'}).",
                                   "Register it in Delegation(audiences=...) or MCP_TOKEN_EXCHANGE_AUDIENCES.",
                                   code=JsonRpcErrorCode.InternalError)
        return target

    async def token(self, caller: AuthInfo | None, name: str, scopes: Sequence[str] | None = None) -> DownstreamToken:
        """A token for audience ``name`` on ``caller``'s behalf: cached, else obtained.

        Raises:
            DelegationFailed: no caller token, an unknown audience, a refusal, an unreachable endpoint.
        """
        target = self.audience(name)
        if caller is None:
            raise DelegationFailed.no_token(name)
        wanted = tuple(scopes) if scopes is not None else target.scopes
        if wanted != target.scopes:
            target = replace(target, scopes=wanted)
        key = _key(caller, target, wanted)
        while True:
            cached = await self._cached(key)
            if cached is not None:
                return cached
            waiting = self._inflight.get(key)
            if waiting is None:
                break
            await waiting.wait()
        done = self._inflight[key] = anyio.Event()
        try:
            token = await (target.source or self.source).obtain(caller, target)
            await self._store(key, token, caller)
        finally:
            del self._inflight[key]
            done.set()
        return token

    async def forget(self, caller: AuthInfo | None, name: str, scopes: Sequence[str] | None = None) -> None:
        """Drop the cached token (the downstream API refused it)."""
        if caller is None:
            return
        target = self.audience(name)
        wanted = tuple(scopes) if scopes is not None else target.scopes
        key = _key(caller, replace(target, scopes=wanted), wanted)
        self._memory.pop(key, None)
        if self.redis is not None:
            try:
                await self.redis.delete(self.prefix + key)
            except UNAVAILABLE:
                log.warning("the delegated token cache (Redis) is unreachable")

    async def _cached(self, key: str) -> DownstreamToken | None:
        if self.redis is None:
            hit = self._memory.get(key)
            if hit is None or hit[0] <= time.time():
                return None
            return hit[1]
        try:
            raw = await self.redis.get(self.prefix + key)
        except UNAVAILABLE:
            log.warning("the delegated token cache (Redis) is unreachable; exchanging without it")
            return None
        return _load(raw) if raw is not None else None

    async def _store(self, key: str, token: DownstreamToken, caller: AuthInfo) -> None:
        now = time.time()
        ends = [t for t in (token.expires_at, caller.expires_at) if t is not None]
        if not ends:
            return  # a token whose lifetime is not known is used once
        end = min(ends)
        until = end - min(self.margin, (end - now) / 2)
        if until <= now:
            return
        if self.redis is None:
            if len(self._memory) >= self.max_entries:
                for k in [k for k, (u, _) in self._memory.items() if u <= now]:
                    del self._memory[k]
                while len(self._memory) >= self.max_entries:
                    del self._memory[next(iter(self._memory))]
            self._memory[key] = (until, token)
            return
        try:
            await self.redis.set(self.prefix + key, _dump(token), px=max(1, int((until - now) * 1000)))
        except UNAVAILABLE:
            log.warning("the delegated token cache (Redis) is unreachable; the token is not cached")


def _delegation(ctx: Context) -> Delegation:
    found = getattr(ctx._req.services, "delegation", None)
    if found is None:
        raise DelegationFailed("delegation_not_configured", "This server has no downstream token source configured.",
                               "Pass McpApp(delegation=...) or set MCP_TOKEN_EXCHANGE_URL.",
                               code=JsonRpcErrorCode.InternalError)
    return found  # type: ignore[no-any-return]


async def token_for(ctx: Context, audience: str, *, scopes: Sequence[str] | None = None) -> DownstreamToken:
    """A token for the downstream ``audience`` on behalf of ``ctx``'s caller.

    Raises:
        DelegationFailed: see :meth:`Delegation.token`.
    """
    return await _delegation(ctx).token(ctx.auth, audience, scopes)


class DelegatedAuth(httpx.Auth):
    """``httpx.Auth`` sending the delegated token of one caller and audience (async clients only)."""

    requires_request_body = True  # the request may be sent twice (after a 401)

    def __init__(self, delegation: Delegation, caller: AuthInfo | None, audience: str,
                 scopes: Sequence[str] | None = None) -> None:
        self.delegation = delegation
        self.caller = caller
        self.audience = audience
        self.scopes = scopes

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("DelegatedAuth obtains tokens asynchronously: use it with httpx.AsyncClient")

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token = await self.delegation.token(self.caller, self.audience, self.scopes)
        request.headers["Authorization"] = token.authorization
        response = yield request
        if response.status_code == 401:
            await self.delegation.forget(self.caller, self.audience, self.scopes)
            token = await self.delegation.token(self.caller, self.audience, self.scopes)
            request.headers["Authorization"] = token.authorization
            yield request


def delegated_token(audience: str, *, scopes: Sequence[str] | None = None) -> Callable[[Context],
                                                                                      Awaitable[DownstreamToken]]:
    """A dependency giving the caller's token for ``audience``:
    ``token: Annotated[DownstreamToken, Depends(delegated_token("billing"))]``."""
    async def provide(ctx: Context) -> DownstreamToken:
        return await token_for(ctx, audience, scopes=scopes)

    provide.__qualname__ = f"delegated_token({audience!r})"
    return provide


def delegated_auth(audience: str, *, scopes: Sequence[str] | None = None) -> Callable[[Context],
                                                                                     Awaitable[DelegatedAuth]]:
    """A dependency giving an ``httpx.Auth`` for ``audience`` on the caller's behalf:
    ``auth: Annotated[httpx.Auth, Depends(delegated_auth("billing"))]``."""
    async def provide(ctx: Context) -> DelegatedAuth:
        return DelegatedAuth(_delegation(ctx), ctx.auth, audience, scopes)

    provide.__qualname__ = f"delegated_auth({audience!r})"
    return provide
