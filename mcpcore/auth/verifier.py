"""``TokenVerifier``: bring your own verification of bearer tokens (``McpApp(auth=...)``).

The door stays the framework's: the ``Authorization`` header is parsed (one header, Bearer, a
well-formed token of bounded size) and every refusal is answered with the same statuses and
``WWW-Authenticate`` challenge as in the built-in modes. A verifier only turns a token into an
identity::

    class ApiKeys:
        async def verify_token(self, token: str) -> AuthInfo | None:
            row = await db.fetch_key(token)
            return AuthInfo(client_id=row.client, scopes=tuple(row.scopes)) if row else None

    app = McpApp("demo", auth=ApiKeys())
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, runtime_checkable

from ..context import AuthInfo
from .base import parse_bearer
from .errors import AuthError

__all__ = ["TokenVerifier", "VerifierAuthenticator"]

log = logging.getLogger("mcpcore.auth")


@runtime_checkable
class TokenVerifier(Protocol):
    """Turns a bearer token into the caller's identity.

    ``verify_token`` returns the identity, or ``None`` for a token it does not accept (answered
    401 ``invalid_token``); it may raise :class:`~mcpcore.auth.AuthError` for a more precise
    answer (403 for a token meant for another resource, 503 while its backend is away). Any other
    exception is answered 503, so a client keeps a token that may well be valid. A verifier may
    also have ``async def start()`` and ``async def close()``, called at startup and shutdown,
    and ``async def verify_token_from(token, source)``, called instead of ``verify_token`` with
    the peer's address (or ``None``) to bound its work per source, as introspection does.
    """

    async def verify_token(self, token: str) -> AuthInfo | None:
        """The identity ``token`` proves, or ``None``."""
        ...


class VerifierAuthenticator:
    """The door's :class:`~mcpcore.auth.Authenticator` around a :class:`TokenVerifier`."""

    def __init__(self, verifier: TokenVerifier, mode: str = "custom") -> None:
        if not callable(getattr(verifier, "verify_token", None)):
            raise TypeError(f"auth= takes a TokenVerifier (an object with async verify_token), got {verifier!r}")
        self.verifier = verifier
        self.mode = mode

    def __repr__(self) -> str:
        return f"VerifierAuthenticator({self.verifier!r})"

    async def start(self) -> None:
        """Start the verifier, when it has a ``start``."""
        start: Any = getattr(self.verifier, "start", None)
        if callable(start):
            await start()

    async def close(self) -> None:
        """Close the verifier, when it has a ``close``."""
        close: Any = getattr(self.verifier, "close", None)
        if callable(close):
            await close()

    async def authenticate(self, authorization: str | None) -> AuthInfo:
        """Parse the header, then ask the verifier."""
        return await self.authenticate_from(authorization, None)

    async def authenticate_from(self, authorization: str | None, source: str | None) -> AuthInfo:
        """:meth:`authenticate` for a request from ``source`` (the peer's address), handed to a
        verifier that bounds its work per source (``verify_token_from``, as introspection does)."""
        token = parse_bearer(authorization)
        by_source = getattr(self.verifier, "verify_token_from", None)
        try:
            info = await (by_source(token, source) if by_source is not None else self.verifier.verify_token(token))
        except AuthError as exc:
            log.debug("bearer token rejected", extra={"fields": {"reason": exc.reason, "mode": self.mode}})
            raise
        except Exception:
            log.warning("the token verifier failed; answering 503", exc_info=True)
            raise AuthError.unavailable() from None
        if info is None:
            raise AuthError.invalid_token("Token is invalid.", reason="rejected")
        if not isinstance(info, AuthInfo):
            log.error("the token verifier returned %s, not an AuthInfo; refusing the request", type(info).__name__)
            raise AuthError.unavailable()
        return info
