"""The ``Authenticator`` protocol, Bearer header parsing and PyJWT error mapping shared by both modes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..asgi_types import Scope
from ..context import AuthInfo
from .errors import AuthError

if TYPE_CHECKING:  # PyJWT (and cryptography under it) load with the first authenticator only
    import jwt

__all__ = ["MAX_TOKEN_BYTES", "Authenticator", "authenticate_header", "authenticate_scope", "authorization_of",
           "parse_bearer", "single_authorization"]

# A bearer token larger than this is refused before any parsing (hostile input).
MAX_TOKEN_BYTES = 16 * 1024
# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


@runtime_checkable
class Authenticator(Protocol):
    """Verifies the ``Authorization`` header of one request.

    ``start()`` once before serving (opens the JWKS client, warms the key cache), ``close()`` at
    shutdown. ``authenticate`` is safe to call concurrently. Optional methods the door uses
    (:func:`authenticate_scope`):

    * ``async def authenticate_request(scope) -> AuthInfo``: an authenticator that reads more of
      the request than its ``Authorization`` header (the host app's user, a DPoP proof); called
      instead of :meth:`authenticate`.
    * ``async def authenticate_from(authorization, source) -> AuthInfo``: one that bounds its
      work per source address (introspection); called instead, with the peer's address
      (``None`` when unknown).
    * ``share(redis)``: one that can use the app's shared Redis client; called before :meth:`start`.
    """

    @property
    def mode(self) -> str:
        """``"jwt"``, ``"oauth"``, ``"introspection"``, ``"custom"`` (a ``TokenVerifier``) or ``"host"``."""
        ...

    async def start(self) -> None:
        """Acquire resources (HTTP client); never fails because an issuer is unreachable."""
        ...

    async def close(self) -> None:
        """Release resources; idempotent."""
        ...

    async def authenticate(self, authorization: str | None) -> AuthInfo:
        """Verify ``Authorization: Bearer <token>`` and return the caller's identity.

        Raises:
            AuthError: the request is refused; see :mod:`mcpcore.auth.errors` for the statuses.
        """
        ...


def single_authorization(values: Sequence[str]) -> str | None:
    """The one ``Authorization`` header of a request (``headers.getlist("authorization")``).

    Raises:
        AuthError: 400 ``invalid_request`` when the header is repeated (RFC 6750 §2: one method).
    """
    if not values:
        return None
    if len(values) > 1:
        raise AuthError.invalid_request("Multiple Authorization headers.", reason="multiple_headers")
    return values[0]


def authorization_of(scope: Scope) -> str | None:
    """The request's one ``Authorization`` header (:func:`single_authorization` of its headers)."""
    return single_authorization([v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"])


async def authenticate_header(authenticator: Authenticator, authorization: str | None, scope: Scope) -> AuthInfo:
    """``authorization`` checked by ``authenticator``, given the request's source address when it
    bounds its work per source (``authenticate_from``)."""
    from_source = getattr(authenticator, "authenticate_from", None)
    if from_source is not None:
        peer = scope.get("client")
        found: AuthInfo = await from_source(authorization, peer[0] if peer else None)
        return found
    return await authenticator.authenticate(authorization)


async def authenticate_scope(authenticator: Authenticator, scope: Scope) -> AuthInfo:
    """The caller of the request ``scope`` by ``authenticator``: the whole request to one that
    reads it (``authenticate_request``), else its one ``Authorization`` header."""
    by_request = getattr(authenticator, "authenticate_request", None)
    if by_request is not None:
        found: AuthInfo = await by_request(scope)
        return found
    return await authenticate_header(authenticator, authorization_of(scope), scope)


def parse_bearer(authorization: str | None) -> str:
    """The token of ``Authorization: Bearer <token>``.

    Raises:
        AuthError: 401 without an error code when the header is absent or not Bearer; 400
            ``invalid_request`` when the Bearer credentials are empty or not an RFC 6750 b64token;
            401 ``invalid_token`` when the token is larger than :data:`MAX_TOKEN_BYTES`.
    """
    if authorization is None or not authorization.strip():
        raise AuthError.missing()
    scheme, _, rest = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise AuthError.missing("Authentication required: use the Bearer scheme.", reason="unsupported_scheme")
    token = rest.strip(" ")
    if not token:
        raise AuthError.invalid_request("Bearer token is empty.", reason="malformed_header")
    if len(token) > MAX_TOKEN_BYTES:
        raise AuthError.invalid_token("Token is too large.", reason="too_large")
    if not _B64TOKEN.fullmatch(token):
        raise AuthError.invalid_request("Malformed Authorization header.", reason="malformed_header")
    return token


def unverified_header(token: str) -> dict[str, Any]:
    """The JOSE header (only to choose the key and refuse algorithms early; nothing is trusted)."""
    import jwt

    try:
        header = jwt.get_unverified_header(token)
    except (jwt.PyJWTError, ValueError, TypeError, KeyError):
        raise AuthError.invalid_token("Token is malformed.", reason="malformed") from None
    alg = header.get("alg")
    if not isinstance(alg, str):
        raise AuthError.invalid_token("Token is malformed.", reason="malformed")
    return header


def map_jwt_error(exc: jwt.PyJWTError) -> AuthError:
    """The documented :class:`AuthError` for a PyJWT verification failure (no library text leaks)."""
    import jwt

    if isinstance(exc, jwt.ExpiredSignatureError):
        return AuthError.invalid_token("Token has expired.", reason="expired")
    if isinstance(exc, jwt.ImmatureSignatureError):
        return AuthError.invalid_token("Token is not yet valid.", reason="not_yet_valid")
    if isinstance(exc, jwt.InvalidIssuerError):
        return AuthError.invalid_token("Token issuer is not accepted.", reason="issuer")
    if isinstance(exc, jwt.InvalidAudienceError):
        return AuthError.invalid_token("Token audience is not accepted.", reason="audience")
    if isinstance(exc, jwt.MissingRequiredClaimError):
        claim = exc.claim if exc.claim in ("exp", "iss", "aud") else "required"
        return AuthError.invalid_token(f"Token is missing the '{claim}' claim.", reason="missing_claim")
    if isinstance(exc, jwt.InvalidSignatureError):
        return AuthError.invalid_token("Token signature is invalid.", reason="signature")
    if isinstance(exc, jwt.InvalidAlgorithmError):
        return AuthError.invalid_token("Token signing algorithm is not accepted.", reason="algorithm")
    if isinstance(exc, jwt.InvalidKeyError):
        return AuthError.invalid_token("Token signing key is not usable.", reason="bad_key")
    if isinstance(exc, jwt.DecodeError):
        return AuthError.invalid_token("Token is malformed.", reason="malformed")
    return AuthError.invalid_token("Token is invalid.", reason="invalid")
