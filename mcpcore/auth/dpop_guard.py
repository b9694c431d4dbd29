"""``MCP_AUTH_DPOP=allowed|required``: sender-constrained tokens (RFC 9449) at the door.

:class:`DPoPGuard` wraps the app's token authenticator (jwt, oauth, introspection or your
``TokenVerifier``); the token is verified by it exactly as without DPoP, then:

- ``Authorization: DPoP <token>`` with one ``DPoP`` proof: the proof is checked
  (:class:`~mcpcore.auth.dpop.ProofChecker`), the token must be bound to the proof's key
  (``cnf.jkt`` equal to its RFC 7638 thumbprint: 401 ``invalid_token`` otherwise, a token
  without ``cnf`` included), and the proof is used once (its ``jti``, in a cache every instance
  shares when the stores are in Redis: 401 ``invalid_dpop_proof`` for a replay).
- ``Authorization: Bearer <token>``: with ``allowed`` an unbound token is served as before and a
  bound one refused (401 ``invalid_token``: a DPoP-bound token without its proof is a stolen one
  as far as the server can tell); with ``required`` only the ``DPoP`` scheme is accepted.

Challenges carry the ``DPoP`` scheme and ``algs``; with ``allowed`` both schemes are offered
(``Bearer realm="mcp", ..., DPoP realm="mcp", algs="..."``). With ``MCP_AUTH_DPOP_NONCE_KEY`` the
proofs must carry a server nonce: a proof without the current one is answered 401
``use_dpop_nonce`` with ``DPoP-Nonce``, and answers carry the next one before it changes.
The token's own claims reach ``ctx.auth`` unchanged (``ctx.auth.claims["cnf"]``).
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from ..asgi_types import Scope
from ..context import AuthInfo
from .base import MAX_TOKEN_BYTES, Authenticator, authenticate_header, authorization_of, parse_bearer
from .dpop import DEFAULT_ALGS, ProofChecker, request_url
from .errors import AuthError
from .replay import MemoryReplayCache, Nonces, RedisReplayCache, ReplayCache

__all__ = ["DPoPGuard", "bound_key"]

log = logging.getLogger("mcpcore.auth")


def bound_key(info: AuthInfo) -> str | None:
    """The ``cnf.jkt`` a token is bound to (RFC 9449 §6), or ``None``."""
    cnf = info.claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
    return jkt if isinstance(jkt, str) else None


class DPoPGuard:
    """The DPoP checks around a token authenticator (see the module docstring).

    Args:
        tokens: the authenticator that verifies the access token itself.
        required: ``True`` for ``MCP_AUTH_DPOP=required``, ``False`` for ``allowed``.
        algs: proof algorithms accepted (``MCP_AUTH_DPOP_ALGS``).
        window: seconds a proof's ``iat`` may be from now (``MCP_AUTH_DPOP_IAT_WINDOW_MS``).
        nonce_key: ``MCP_AUTH_DPOP_NONCE_KEY``; nonces are required when set.
        public_url: ``MCP_PUBLIC_URL``, the base ``htu`` is compared against.
        replay: the replay cache (default: this process's, or Redis once :meth:`share` gives it).
    """

    def __init__(self, tokens: Authenticator, *, required: bool = False, algs: tuple[str, ...] = DEFAULT_ALGS,
                 window: float = 300.0, nonce_key: str | None = None, public_url: str | None = None,
                 replay: ReplayCache | None = None) -> None:
        self.tokens = tokens
        self.required = required
        self.nonces = Nonces(nonce_key, period=window) if nonce_key else None
        self.proofs = ProofChecker(algs, window=window,
                                   nonce_state=self.nonces.state if self.nonces is not None else None,
                                   fresh_nonce=self.nonces.fresh if self.nonces is not None else None)
        self.public_url = public_url or None
        self.replay: ReplayCache = replay if replay is not None else MemoryReplayCache()
        self._algs = " ".join(self.proofs.algs)
        self._dpop_challenge = f'DPoP realm="mcp", algs="{self._algs}"'

    @property
    def mode(self) -> str:
        """The token authenticator's mode."""
        return self.tokens.mode

    @property
    def verifier(self) -> object:
        """What ``app.layers`` names for the auth layer: the token verifier."""
        return getattr(self.tokens, "verifier", self.tokens)

    def __repr__(self) -> str:
        return f"DPoPGuard({self.tokens!r}, required={self.required}, algs={self._algs!r})"

    def share(self, redis: Any) -> None:
        """Keep used proofs in the app's Redis, so every instance refuses a replay."""
        self.replay = RedisReplayCache(redis)
        share = getattr(self.tokens, "share", None)
        if share is not None:
            share(redis)

    async def start(self) -> None:
        """Start the token authenticator."""
        await self.tokens.start()

    async def close(self) -> None:
        """Close the token authenticator."""
        await self.tokens.close()

    def fresh_nonce(self) -> str | None:
        """The nonce answers should carry (``None`` without nonces)."""
        return self.nonces.fresh() if self.nonces is not None else None

    async def authenticate(self, authorization: str | None) -> AuthInfo:
        """A request known only by its header has no proof: the Bearer rules apply."""
        return await self._verify({"headers": [], "method": "GET"}, authorization)

    async def authenticate_request(self, scope: Scope) -> AuthInfo:
        """Verify the token and, under the DPoP scheme, its proof (see the module docstring)."""
        try:
            authorization = authorization_of(scope)
        except AuthError as exc:
            raise self._challenge(exc, dpop=False) from None
        return await self._verify(scope, authorization)

    async def _verify(self, scope: Scope, authorization: str | None) -> AuthInfo:
        if authorization is None or not authorization.strip():
            raise self._challenge(AuthError.missing(), dpop=self.required)
        scheme, _, rest = authorization.strip().partition(" ")
        if scheme.lower() == "dpop":
            return await self._dpop(scope, rest.strip(" "))
        if scheme.lower() != "bearer" or self.required:
            raise self._challenge(AuthError.missing("Authentication required: use the DPoP scheme."
                                                    if self.required else "Authentication required.",
                                                    reason="unsupported_scheme"), dpop=self.required)
        try:
            info = await authenticate_header(self.tokens, authorization, scope)
        except AuthError as exc:
            raise self._challenge(exc, dpop=False) from None
        if bound_key(info) is not None:
            raise self._challenge(AuthError.invalid_token("A DPoP-bound token needs the DPoP scheme and a proof.",
                                                          reason="bound_token_as_bearer"), dpop=False)
        return info

    async def _dpop(self, scope: Scope, token: str) -> AuthInfo:
        if len(token) > MAX_TOKEN_BYTES:
            raise self._challenge(AuthError.invalid_token("Token is too large.", reason="too_large"), dpop=True)
        try:
            parse_bearer(f"Bearer {token}")  # the same token syntax as RFC 6750's
        except AuthError as exc:
            raise self._challenge(exc, dpop=True) from None
        proofs = [v for k, v in scope["headers"] if k == b"dpop"]
        try:
            proof = self.proofs.check(proofs, scope["method"], request_url(scope, self.public_url), token)
            info = await authenticate_header(self.tokens, f"Bearer {token}", scope)
        except AuthError as exc:
            raise self._challenge(exc, dpop=True) from None
        jkt = bound_key(info)
        if jkt is None:
            raise self._challenge(AuthError.invalid_token("Token is not bound to a DPoP key.", reason="unbound_token"),
                                  dpop=True)
        if not hmac.compare_digest(jkt.encode(), proof.jkt.encode()):
            raise self._challenge(AuthError.invalid_token("Invalid DPoP key binding.", reason="key_binding"),
                                  dpop=True)
        if not await self.replay.first_use(proof.replay_key, 2 * self.proofs.window):
            raise self._challenge(AuthError(401, "invalid_dpop_proof", "DPoP proof was already used.",
                                            reason="replay"), dpop=True)
        return info

    def _challenge(self, exc: AuthError, *, dpop: bool) -> AuthError:
        """``exc`` with the challenges of this server: the scheme the client used (``DPoP`` when
        it used it or must), its ``algs``, and the other scheme while both are accepted."""
        if exc.status == 503:
            return exc
        log.debug("DPoP request refused", extra={"fields": {"reason": exc.reason, "mode": self.mode}})
        if dpop:
            return AuthError(exc.status, exc.error, exc.description, reason=exc.reason, scopes=exc.scopes,
                             scheme="DPoP", params=(("algs", self._algs),),
                             also=None if self.required else 'Bearer realm="mcp"', nonce=exc.nonce)
        return AuthError(exc.status, exc.error, exc.description, reason=exc.reason, scopes=exc.scopes,
                         also=self._dpop_challenge, nonce=exc.nonce)
