"""``MCP_AUTH_MODE=jwt``: HS256 tokens signed with a local shared secret."""

from __future__ import annotations

import logging

import jwt
from pydantic import SecretStr

from ..context import AuthInfo
from ..errors import ConfigurationError
from .base import map_jwt_error, parse_bearer, unverified_header
from .claims import auth_info_from_claims
from .errors import AuthError

__all__ = ["MIN_SECRET_LENGTH", "JwtAuthenticator"]

log = logging.getLogger("mcpcore.auth")
MIN_SECRET_LENGTH = 32


class _Secret:
    """Bytes that never print."""

    __slots__ = ("_value",)

    def __init__(self, value: bytes) -> None:
        self._value = value

    def get(self) -> bytes:
        return self._value

    def __repr__(self) -> str:
        return "'**********'"

    __str__ = __repr__


class JwtAuthenticator:
    """Verifies HS256 bearer tokens with ``MCP_AUTH_SECRET_KEY``; no other algorithm is accepted.

    ``exp`` is required. ``iss`` and ``aud`` are checked when ``issuer``/``audience`` are given
    (``MCP_JWT_EXPECTED_ISSUER`` / ``MCP_JWT_EXPECTED_AUDIENCE``); otherwise any value is accepted.
    The MAC comparison is PyJWT's (``hmac.compare_digest``, constant time).

    Raises:
        ConfigurationError: the secret is missing or shorter than 32 characters.
    """

    mode = "jwt"
    algorithms: tuple[str, ...] = ("HS256",)

    def __init__(self, secret: str | bytes | SecretStr | None, *, issuer: str | None = None,
                 audience: str | None = None, leeway: float = 0.0) -> None:
        raw = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
        if raw is None or len(raw) == 0:
            raise ConfigurationError("MCP_AUTH_SECRET_KEY is required when MCP_AUTH_MODE=jwt")
        if len(raw) < MIN_SECRET_LENGTH:
            raise ConfigurationError(
                f"MCP_AUTH_SECRET_KEY must be at least {MIN_SECRET_LENGTH} characters when MCP_AUTH_MODE=jwt")
        self._secret = _Secret(raw.encode() if isinstance(raw, str) else bytes(raw))
        self.issuer = issuer or None
        self.audience = audience or None
        self.leeway = leeway

    def __repr__(self) -> str:
        return f"JwtAuthenticator(issuer={self.issuer!r}, audience={self.audience!r}, secret='**********')"

    async def start(self) -> None:
        """Nothing to acquire."""

    async def close(self) -> None:
        """Nothing to release."""

    async def authenticate(self, authorization: str | None) -> AuthInfo:
        """Verify ``Authorization: Bearer <HS256 token>``; see :class:`~mcpcore.auth.Authenticator`."""
        try:
            return self.verify(parse_bearer(authorization))
        except AuthError as e:
            log.debug("bearer token rejected", extra={"fields": {"reason": e.reason, "mode": self.mode}})
            raise

    def verify(self, token: str) -> AuthInfo:
        """Verify a bare token (no header parsing).

        Raises:
            AuthError: 401 ``invalid_token`` with the documented description.
        """
        header = unverified_header(token)
        if header["alg"] not in self.algorithms:
            raise AuthError.invalid_token("Token signing algorithm is not accepted.", reason="algorithm")
        try:
            claims = jwt.decode(
                token,
                self._secret.get(),
                algorithms=list(self.algorithms),
                issuer=self.issuer,
                audience=self.audience,
                leeway=self.leeway,
                options={
                    "require": ["exp"] + (["iss"] if self.issuer else []) + (["aud"] if self.audience else []),
                    "verify_aud": self.audience is not None,
                    "enforce_minimum_key_length": True,
                },
            )
        except jwt.PyJWTError as e:
            raise map_jwt_error(e) from None
        except (ValueError, TypeError, KeyError):  # hostile input PyJWT did not wrap: refuse, never a 500
            raise AuthError.invalid_token("Token is malformed.", reason="malformed") from None
        return auth_info_from_claims(claims, token)
