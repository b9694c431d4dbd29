"""The upstream provider's tokens, for the server's own calls to the provider's APIs.

They are kept sealed (AES-256-GCM, :mod:`.keys`) in the grant's record in the store, never sent
to the MCP client. A handler gets a fresh access token with :func:`upstream_token`; a
delegation audience can use :class:`UpstreamCredentials` as its source::

    @tool
    async def my_repos(ctx: Context) -> list[str]:
        token = await upstream_token(ctx)
        ...  # call the provider's API with it

An expired token (30 s of margin) is refreshed with the provider's refresh token, and the new
ones sealed back; concurrent calls of one process share one refresh.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from ...context import AuthInfo
from ..delegation import Audience, DelegationFailed, DownstreamToken
from .core import ProxyCore
from .upstream import UpstreamError

__all__ = ["UpstreamCredentials", "active", "upstream_token", "upstream_tokens"]

MARGIN = 30.0
_ACTIVE: dict[str, ProxyCore] = {}
_LOCKS: dict[str, anyio.Lock] = {}


def active(issuer: str, core: ProxyCore) -> None:
    """Make the proxy whose parts are ``core`` the one tokens with ``iss`` = ``issuer`` name
    (done when it starts)."""
    _ACTIVE[issuer] = core


def _unavailable(message: str) -> DelegationFailed:
    return DelegationFailed("upstream_token_unavailable", message,
                            "Sign in again: the grant this token came from has ended.")


def _auth_of(caller: Any) -> AuthInfo:
    auth = caller if isinstance(caller, AuthInfo) else getattr(caller, "auth", None)
    if not isinstance(auth, AuthInfo):
        raise _unavailable("This request carries no token of this server's authorization server.")
    return auth


async def upstream_tokens(caller: Any) -> dict[str, Any]:
    """The provider's tokens for ``caller`` (a ``Context`` or its ``AuthInfo``), refreshed when
    needed: ``access_token`` and, when the provider gave them, ``refresh_token``, ``id_token``,
    ``expires_at``, ``scope``.

    Raises:
        DelegationFailed: the caller's token is not one of ours, or its grant has ended.
    """
    auth = _auth_of(caller)
    core = _ACTIVE.get(str(auth.claims.get("iss")))
    family = auth.claims.get("fam")
    if core is None or not isinstance(family, str):
        raise _unavailable("This request's token was not issued by this server's authorization server.")
    lock = _LOCKS.setdefault(family, anyio.Lock())
    try:
        async with lock:
            record = await core.store.get("family", family)
            context = f"upstream:{auth.subject}"
            tokens = core.keys.open(record["upstream"], context) if record is not None else None
            if record is None or tokens is None:
                raise _unavailable("The grant behind this token has ended or was revoked.")
            expires = tokens.get("expires_at")
            if isinstance(expires, (int, float)) and expires - MARGIN <= time.time():
                if not tokens.get("refresh_token"):
                    raise _unavailable("The provider's token expired and it gave no refresh token.")
                try:
                    tokens = await core.upstream.refresh(tokens["refresh_token"])
                except UpstreamError as e:
                    raise _unavailable(f"The provider refused to refresh its token: {e}") from None
                record["upstream"] = core.keys.seal(tokens, context)
                await core.store.put("family", family, record, core.refresh_ttl)
            return tokens
    finally:
        if not lock.statistics().tasks_waiting:
            _LOCKS.pop(family, None)


async def upstream_token(caller: Any) -> str:
    """The provider's access token for ``caller`` (see :func:`upstream_tokens`)."""
    return str((await upstream_tokens(caller))["access_token"])


class UpstreamCredentials:
    """A :class:`~mcpcore.auth.delegation.CredentialSource`: the provider's token for the caller,
    whatever the audience (the provider's own APIs)."""

    async def obtain(self, caller: AuthInfo, target: Audience) -> DownstreamToken:
        """The caller's upstream access token.

        Raises:
            DelegationFailed: see :func:`upstream_tokens`.
        """
        tokens = await upstream_tokens(caller)
        expires = tokens.get("expires_at")
        scope = tokens.get("scope")
        return DownstreamToken(str(tokens["access_token"]), expires_at=float(expires) if expires else None,
                               scopes=tuple(scope.split()) if isinstance(scope, str) else ())
