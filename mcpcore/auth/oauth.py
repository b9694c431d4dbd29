"""``MCP_AUTH_MODE=oauth``: access tokens from an external authorization server, verified with its JWKS.

Key handling:

- The key set is fetched with httpx from ``OAUTH_JWKS_URI`` (no redirects, a body cap of 1 MiB, an
  overall deadline of ``OAUTH_JWKS_TIMEOUT_MS``) and cached. Concurrent misses share one fetch.
- A token whose ``kid`` is not in the cache triggers one refetch, but never more than once per
  ``OAUTH_JWKS_COOLDOWN_MS`` after a successful fetch: a flood of random ``kid`` values costs the
  issuer at most one request per cooldown. Within the cooldown an unknown ``kid`` is 401.
- The cached set is refreshed once it is older than ``cache_max_age`` (10 min), so a key the issuer
  withdrew stops verifying; if that refresh fails the previous set stays in use.
- When keys are needed but cannot be fetched (timeout, connection error, non-200, malformed JSON),
  the answer is **503** with ``Retry-After``, not 401: the token may well be valid, and a 401 would
  make the client throw it away and restart authorisation against an issuer that is down. After a
  failed fetch, retries are spaced by ``failure_backoff`` (1 s) so an outage is not amplified.
- Only RS256, ES256 (P-256) and PS256 are accepted; ``alg: none``, HS* and anything else is refused
  before a key is looked up. The ``jku``/``x5u``/``jwk`` headers are ignored: keys come only from the
  configured URI. A JWK's own ``alg`` and ``use`` must agree with the token. Signatures and the
  ``exp``/``nbf``/``iat``/``iss``/``aud`` checks are PyJWT's (``jwt.decode`` with ``PyJWK`` keys and
  an explicit ``algorithms=[alg]``); ``exp``, ``iss`` and ``aud`` are required.
- With ``MCP_SERVER_RESOURCE_IDENTIFIER`` set (RFC 8707), the token's ``resource`` claim or its
  ``aud`` must contain that identifier (a trailing ``/`` is ignored), else 403.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import jwt
from jwt import PyJWK

from .. import _json
from ..context import AuthInfo
from ..errors import ConfigurationError
from .base import map_jwt_error, parse_bearer, unverified_header
from .claims import auth_info_from_claims, names_resource
from .errors import AuthError

__all__ = ["MAX_JWKS_BYTES", "OAuthAuthenticator", "check_url", "default_jwks_uri"]

log = logging.getLogger("mcpcore.auth")

MAX_JWKS_BYTES = 1024 * 1024
_ALG_KTY = {"RS256": "RSA", "PS256": "RSA", "ES256": "EC"}
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def check_url(var: str, url: str) -> str:
    """``url`` when it is https, or http on a loopback host (tests, sidecars).

    Raises:
        ConfigurationError: naming ``var``.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"{var} must be an absolute http(s) URL, got {url!r}")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise ConfigurationError(f"{var} must use https (plain http is allowed only for loopback hosts), got {url!r}")
    return url


def default_jwks_uri(issuer: str) -> str:
    """``{issuer}/.well-known/jwks.json``."""
    return issuer.rstrip("/") + "/.well-known/jwks.json"


class OAuthAuthenticator:
    """Verifies access tokens issued by ``issuer`` for ``audience`` with keys from ``jwks_uri``.

    Args:
        issuer: ``OAUTH_ISSUER_URL``; the token's ``iss`` must equal it exactly.
        audience: ``OAUTH_AUDIENCE``; the token's ``aud`` must contain it.
        jwks_uri: ``OAUTH_JWKS_URI``; default :func:`default_jwks_uri`.
        resource: ``MCP_SERVER_RESOURCE_IDENTIFIER`` for the RFC 8707 check, or ``None``.
        cooldown: seconds between refetches triggered by unknown ``kid`` values.
        timeout: overall seconds for one JWKS fetch.
        cache_max_age: seconds after which the cached set is refreshed on the next request.
        failure_backoff: seconds between attempts after a failed fetch (capped by ``cooldown``).
        leeway: clock skew tolerance in seconds for ``exp``/``nbf``/``iat``.
        http_client: an httpx client to use (not closed by :meth:`close`); else one is created.
        transport: an httpx transport for the created client (tests: ``httpx.MockTransport``).
        clock: a monotonic clock (tests).
        local_jwks: the key set itself, in place of a fetch (the authorization server in this
            process: ``MCP_AUTH_MODE=proxy``).

    Raises:
        ConfigurationError: a missing issuer/audience or an unacceptable URL, naming the variable.
    """

    mode = "oauth"
    algorithms: tuple[str, ...] = ("RS256", "ES256", "PS256")

    def __init__(
        self,
        *,
        issuer: str | None,
        audience: str | None,
        jwks_uri: str | None = None,
        resource: str | None = None,
        cooldown: float = 300.0,
        timeout: float = 5.0,
        cache_max_age: float = 600.0,
        failure_backoff: float = 1.0,
        leeway: float = 0.0,
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        local_jwks: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        if not issuer:
            raise ConfigurationError("OAUTH_ISSUER_URL is required when MCP_AUTH_MODE=oauth")
        if not audience:
            raise ConfigurationError("OAUTH_AUDIENCE is required when MCP_AUTH_MODE=oauth")
        check_url("OAUTH_ISSUER_URL", issuer)
        self.issuer = issuer
        self.audience = audience
        self.jwks_uri = check_url("OAUTH_JWKS_URI", jwks_uri) if jwks_uri else default_jwks_uri(issuer)
        self.resource = resource or None
        self.cooldown = max(0.0, cooldown)
        self.timeout = timeout
        self.cache_max_age = max(cache_max_age, self.cooldown)
        self.failure_backoff = min(failure_backoff, self.cooldown)
        self.leeway = leeway
        self._client = http_client
        self._owns_client = http_client is None
        self._transport = transport
        self._clock = clock
        self._local = local_jwks
        self._lock = anyio.Lock()
        self._jwks: list[dict[str, Any]] | None = None
        self._keys: dict[tuple[str | None, str], PyJWK] = {}
        self._fetched_at = -math.inf
        self._failed_at = -math.inf
        self._generation = 0
        self.fetch_count = 0
        """HTTP fetch attempts so far (successful or not); for tests and metrics."""

    def __repr__(self) -> str:
        return (f"OAuthAuthenticator(issuer={self.issuer!r}, audience={self.audience!r}, "
                f"jwks_uri={self.jwks_uri!r}, resource={self.resource!r})")

    # -- lifecycle ------------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout), follow_redirects=False, transport=self._transport,
                headers={"accept": "application/jwk-set+json, application/json"})
        return self._client

    async def start(self) -> None:
        """Open the HTTP client and warm the key cache; an unreachable issuer is logged, not raised."""
        self._http()
        async with self._lock:
            if self._jwks is None and not await self._fetch():
                log.warning("OAuth JWKS could not be fetched at startup; requests answer 503 until it can",
                            extra={"fields": {"jwks_uri": self.jwks_uri}})

    async def close(self) -> None:
        """Close the HTTP client this authenticator created."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    # -- verification ---------------------------------------------------------------------------

    async def authenticate(self, authorization: str | None) -> AuthInfo:
        """Verify ``Authorization: Bearer <access token>``; see :class:`~mcpcore.auth.Authenticator`."""
        try:
            return await self.verify(parse_bearer(authorization))
        except AuthError as e:
            log.debug("bearer token rejected", extra={"fields": {"reason": e.reason, "mode": self.mode}})
            raise

    async def verify(self, token: str) -> AuthInfo:
        """Verify a bare access token.

        Raises:
            AuthError: 401/403 as documented in the module; 503 when the keys cannot be fetched.
        """
        header = unverified_header(token)
        alg = header["alg"]
        if alg not in self.algorithms:
            raise AuthError.invalid_token("Token signing algorithm is not accepted.", reason="algorithm")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise AuthError.invalid_token("Token is malformed.", reason="malformed")
        key = await self._key(kid, alg)
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[alg],
                issuer=self.issuer,
                audience=self.audience,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"], "enforce_minimum_key_length": True},
            )
        except jwt.PyJWTError as e:
            raise map_jwt_error(e) from None
        except (ValueError, TypeError, KeyError):  # hostile input PyJWT did not wrap: refuse, never a 500
            raise AuthError.invalid_token("Token is malformed.", reason="malformed") from None
        if self.resource is not None and not names_resource(claims, self.resource):
            raise AuthError.wrong_resource()
        return auth_info_from_claims(claims, token)

    # -- keys -----------------------------------------------------------------------------------

    async def _key(self, kid: str | None, alg: str) -> PyJWK:
        now = self._clock()
        if self._jwks is None:
            await self._refresh(self._generation, required=True)
        elif now - self._fetched_at >= self.cache_max_age:
            await self._refresh(self._generation, required=False)
        key = self._select(kid, alg)
        if key is not None:
            return key
        if kid is not None:
            if self._clock() - self._fetched_at < self.cooldown:
                raise AuthError.invalid_token("Token signing key is unknown.", reason="unknown_key")
            await self._refresh(self._generation, required=True)
            key = self._select(kid, alg)
            if key is not None:
                return key
        raise AuthError.invalid_token("Token signing key is unknown.", reason="unknown_key")

    async def _refresh(self, seen_generation: int, *, required: bool) -> None:
        """Refetch the key set unless another task already did since ``seen_generation``.

        ``required``: the request cannot be verified without a successful fetch; a failure (or a
        recent failure still in backoff) raises 503. Otherwise a failure keeps the old set.
        """
        async with self._lock:
            if self._generation != seen_generation:
                return
            if self._clock() - self._failed_at < self.failure_backoff:
                ok = False
            else:
                ok = await self._fetch()
        if not ok and required:
            raise AuthError.unavailable(retry_after=max(1, math.ceil(self.failure_backoff)))

    async def _fetch(self) -> bool:
        """One GET of the JWKS (caller holds the lock); True on success."""
        self.fetch_count += 1
        try:
            if self._local is not None:
                return self._loaded({"keys": self._local()})
            with anyio.fail_after(self.timeout):
                async with self._http().stream("GET", self.jwks_uri) as resp:
                    if resp.status_code != 200:
                        raise ValueError(f"HTTP {resp.status_code}")
                    body = bytearray()
                    async for chunk in resp.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_JWKS_BYTES:
                            raise ValueError("JWKS document too large")
            doc = _json.loads(bytes(body))
            if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
                raise ValueError("not a JWK set")
        except (httpx.HTTPError, TimeoutError, OSError, ValueError) as e:
            self._failed_at = self._clock()
            log.warning("OAuth JWKS fetch failed",
                        extra={"fields": {"jwks_uri": self.jwks_uri, "error": type(e).__name__, "detail": str(e)}})
            return False
        return self._loaded(doc)

    def _loaded(self, doc: dict[str, Any]) -> bool:
        self._jwks = [k for k in doc["keys"] if isinstance(k, dict)]
        self._keys = {}
        self._fetched_at = self._clock()
        self._failed_at = -math.inf
        self._generation += 1
        log.debug("OAuth JWKS fetched", extra={"fields": {"jwks_uri": self.jwks_uri, "keys": len(self._jwks)}})
        return True

    def _compatible(self, jwk: Mapping[str, Any], alg: str) -> bool:
        if jwk.get("kty") != _ALG_KTY[alg]:
            return False
        if alg == "ES256" and jwk.get("crv") != "P-256":
            return False
        if jwk.get("alg") not in (None, alg):
            return False
        return jwk.get("use") in (None, "sig")

    def _select(self, kid: str | None, alg: str) -> PyJWK | None:
        """The verification key for ``(kid, alg)``; ``None`` when the set has no key of that ``kid``.

        Raises:
            AuthError: 401 when a key with that ``kid`` exists but cannot verify ``alg``, or when the
                token has no ``kid`` and the set does not have exactly one compatible key.
        """
        cached = self._keys.get((kid, alg))
        if cached is not None:
            return cached
        jwks = self._jwks or []
        if kid is not None:
            same_kid = [k for k in jwks if k.get("kid") == kid]
            if not same_kid:
                return None
            usable = [k for k in same_kid if self._compatible(k, alg)]
            if not usable:
                raise AuthError.invalid_token("Token signing key does not match its algorithm.", reason="key_mismatch")
        else:
            usable = [k for k in jwks if self._compatible(k, alg)]
            if len(usable) != 1:
                raise AuthError.invalid_token("Token header has no 'kid'.", reason="kid_required")
        try:
            key = PyJWK(usable[0], algorithm=alg)
        except jwt.PyJWTError:
            log.warning("OAuth JWKS key is unusable", extra={"fields": {"kid": kid, "alg": alg}})
            raise AuthError.invalid_token("Token signing key is not usable.", reason="bad_key") from None
        self._keys[(kid, alg)] = key
        return key

    @property
    def key_ids(self) -> Sequence[str | None]:
        """The ``kid`` values of the cached key set (empty before the first fetch)."""
        return [k.get("kid") for k in self._jwks or []]
