"""``MCP_AUTH_MODE=introspection``: opaque access tokens checked at the authorization server's
RFC 7662 introspection endpoint, with the answers cached.

- Each unknown token costs one ``POST`` of ``token=...&token_type_hint=access_token`` to
  ``OAUTH_INTROSPECTION_URL``, authenticated with HTTP Basic (``OAUTH_INTROSPECTION_CLIENT_ID`` /
  ``..._SECRET``) when a client id is set; concurrent requests with the same token share it.
- An ``active`` answer becomes ``ctx.auth`` as a JWT's claims do (``client_id``, ``scope``,
  ``sub``, ``tid``, ``exp``; :func:`~mcpcore.auth.auth_info_from_claims`) and is cached for
  ``OAUTH_INTROSPECTION_CACHE_TTL_MS``, never past the token's ``exp``. An inactive one is 401
  and cached for at most 30 s (and the TTL), so a flood of one bad token costs one call per 30 s.
- With ``OAUTH_ISSUER_URL`` / ``OAUTH_AUDIENCE`` set, the answer's ``iss`` must equal the
  issuer and its ``aud`` contain the audience; with ``MCP_SERVER_RESOURCE_IDENTIFIER``, the
  RFC 8707 check of the oauth mode applies.
- An endpoint that cannot answer (timeout, connection error, non-200, not JSON) is 503 with
  ``Retry-After``: the token may be valid.
- Strangers cannot starve known callers (:class:`CallBudget`): at most ``max_calls`` calls to
  the endpoint run at once (``OAUTH_INTROSPECTION_MAX_CALLS``, also the connection pool's size),
  at most ``per_source`` for tokens from one source address
  (``OAUTH_INTROSPECTION_MAX_CALLS_PER_SOURCE``), and sources no active token came from within
  the last hour share three quarters of ``max_calls``: the last quarter is kept for the sources
  that did. A token that would need a call beyond a bound is answered 503 with ``Retry-After``
  at once (it may be valid; nothing waits in a queue); tokens already cached, and requests
  sharing a call in flight, never count.

The cache holds a digest of each token (SHA-256), never the token, and at most ``max_entries``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import httpx

from .. import _json
from ..context import AuthInfo
from ..errors import ConfigurationError
from .claims import auth_info_from_claims, claim_strings, names_resource
from .errors import AuthError
from .oauth import check_url

__all__ = ["CallBudget", "IntrospectionVerifier"]

log = logging.getLogger("mcpcore.auth")

MAX_ANSWER_BYTES = 64 * 1024
NEGATIVE_TTL = 30.0
KNOWN_FOR = 3600.0
"""Seconds a source address counts as known after an active token came from it."""
KNOWN_SOURCES = 10_000
"""Known source addresses remembered at most (the least recently vouched for go first)."""


class CallBudget:
    """Calls to the introspection endpoint in flight: at most ``max_calls`` in all and
    ``per_source`` per source address; sources no active token came from lately (strangers)
    share ``max_calls`` less a quarter kept for known ones."""

    def __init__(self, max_calls: int = 64, per_source: int = 8, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_calls = max_calls
        self.per_source = per_source
        self.strangers_max = max(1, max_calls - max_calls // 4)
        self.calls = 0
        self.stranger_calls = 0
        self._clock = clock
        self._by_source: dict[str, int] = {}
        self._known: OrderedDict[str, float] = OrderedDict()

    def take(self, source: str | None) -> bool:
        """Count a call for a token from ``source``; whether its source is a stranger.

        Raises:
            AuthError: 503 with ``Retry-After`` when a bound is reached.
        """
        stranger = not self.known(source)
        held = self._by_source.get(source, 0) if source is not None else 0
        if self.calls >= self.max_calls or held >= self.per_source or (
                stranger and self.stranger_calls >= self.strangers_max):
            raise AuthError(503, None, "Token verification is busy; retry shortly.", reason="introspection_busy",
                            retry_after=1)
        self.calls += 1
        if stranger:
            self.stranger_calls += 1
        if source is not None:
            self._by_source[source] = held + 1
        return stranger

    def give(self, source: str | None, stranger: bool) -> None:
        """A call counted by :meth:`take` ended."""
        self.calls -= 1
        if stranger:
            self.stranger_calls -= 1
        if source is not None:
            held = self._by_source.pop(source, 1) - 1
            if held > 0:
                self._by_source[source] = held

    def known(self, source: str | None) -> bool:
        """Whether an active token came from ``source`` within :data:`KNOWN_FOR`."""
        if source is None:
            return False
        until = self._known.get(source)
        return until is not None and until > self._clock()

    def vouch(self, source: str | None) -> None:
        """An active token came from ``source``."""
        if source is None:
            return
        known = self._known
        known.pop(source, None)
        known[source] = self._clock() + KNOWN_FOR
        if len(known) > KNOWN_SOURCES:
            known.popitem(last=False)


class IntrospectionVerifier:
    """A :class:`~mcpcore.auth.TokenVerifier` asking an RFC 7662 endpoint.

    Args:
        url: ``OAUTH_INTROSPECTION_URL`` (https, or http on loopback).
        client_id, client_secret: credentials for the endpoint (HTTP Basic); none when unset.
        issuer, audience, resource: optional checks of the answer's ``iss``, ``aud`` and RFC 8707.
        cache_ttl: seconds an active answer is reused (``0``: every request asks).
        timeout: seconds for one call.
        max_entries: answers kept at most.
        http_client / transport: an httpx client to use (not closed here) or a transport for the
            one created (tests).
        clock: a monotonic clock (tests).
        max_calls, per_source: the bounds on calls in flight (:class:`CallBudget`).

    Raises:
        ConfigurationError: no URL, or an unacceptable one.
    """

    def __init__(self, url: str | None, *, client_id: str | None = None, client_secret: str | None = None,
                 issuer: str | None = None, audience: str | None = None, resource: str | None = None,
                 cache_ttl: float = 60.0, timeout: float = 5.0, max_entries: int = 10_000,
                 http_client: httpx.AsyncClient | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 clock: Callable[[], float] = time.monotonic, max_calls: int = 64, per_source: int = 8) -> None:
        if not url:
            raise ConfigurationError("OAUTH_INTROSPECTION_URL is required when MCP_AUTH_MODE=introspection")
        self.url = check_url("OAUTH_INTROSPECTION_URL", url)
        self._auth = httpx.BasicAuth(client_id, client_secret or "") if client_id else None
        self.issuer = issuer or None
        self.audience = audience or None
        self.resource = resource or None
        self.cache_ttl = max(0.0, cache_ttl)
        self.timeout = timeout
        self.max_entries = max_entries
        self._client = http_client
        self._owns_client = http_client is None
        self._transport = transport
        self._clock = clock
        self._cache: dict[bytes, tuple[float, AuthInfo | None]] = {}
        self._inflight: dict[bytes, anyio.Event] = {}
        self.budget = CallBudget(max_calls, per_source, clock)
        self.calls = 0
        """Calls made to the endpoint so far (for tests and metrics)."""

    def __repr__(self) -> str:
        return f"IntrospectionVerifier(url={self.url!r}, issuer={self.issuer!r}, audience={self.audience!r})"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            limits = httpx.Limits(max_connections=self.budget.max_calls,
                                  max_keepalive_connections=min(20, self.budget.max_calls))
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), follow_redirects=False,
                                             transport=self._transport, headers={"accept": "application/json"},
                                             limits=limits)
        return self._client

    async def start(self) -> None:
        """Open the HTTP client."""
        self._http()

    async def close(self) -> None:
        """Close the HTTP client this verifier created."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def verify_token(self, token: str) -> AuthInfo | None:
        """The identity of an active token; ``None`` for an inactive one.

        Raises:
            AuthError: 503 when the endpoint cannot answer (or a bound on calls is reached);
                401/403 when the answer fails the issuer, audience or resource checks.
        """
        return await self.verify_token_from(token, None)

    async def verify_token_from(self, token: str, source: str | None) -> AuthInfo | None:
        """:meth:`verify_token` for a request from ``source`` (the peer's address), whose calls
        to the endpoint count against that source's budget."""
        key = hashlib.sha256(token.encode()).digest()
        while True:
            hit = self._cached(key)
            if hit is not None:
                return hit[1]
            waiting = self._inflight.get(key)
            if waiting is None:
                break
            await waiting.wait()  # another request is asking about this token
            if self._cached(key) is None:  # that call failed: ask ourselves
                break
        stranger = self.budget.take(source)
        done = self._inflight[key] = anyio.Event()
        try:
            info = await self._introspect(token)
        finally:
            self.budget.give(source, stranger)
            del self._inflight[key]
            done.set()
        if info is not None:
            self.budget.vouch(source)
        now = self._clock()
        ttl = min(NEGATIVE_TTL, self.cache_ttl) if info is None else self.cache_ttl
        if info is not None and info.expires_at is not None:
            ttl = min(ttl, info.expires_at - time.time())
        if ttl > 0:
            if len(self._cache) >= self.max_entries:
                self._evict(now)
            self._cache[key] = (now + ttl, info)
        return info

    def _cached(self, key: bytes) -> tuple[float, AuthInfo | None] | None:
        hit = self._cache.get(key)
        if hit is None:
            return None
        if hit[0] <= self._clock():
            del self._cache[key]
            return None
        return hit

    def _evict(self, now: float) -> None:
        for k in [k for k, (until, _) in self._cache.items() if until <= now]:
            del self._cache[k]
        while len(self._cache) >= self.max_entries:
            del self._cache[next(iter(self._cache))]

    async def _introspect(self, token: str) -> AuthInfo | None:
        self.calls += 1
        try:
            with anyio.fail_after(self.timeout):
                resp = await self._http().post(self.url, data={"token": token, "token_type_hint": "access_token"},
                                               auth=self._auth or httpx.USE_CLIENT_DEFAULT)
            if resp.status_code != 200:
                raise ValueError(f"HTTP {resp.status_code}")
            if len(resp.content) > MAX_ANSWER_BYTES:
                raise ValueError("answer too large")
            answer = _json.loads(resp.content)
            if not isinstance(answer, dict) or not isinstance(answer.get("active"), bool):
                raise ValueError("not an introspection answer")
        except (httpx.HTTPError, TimeoutError, OSError, ValueError) as exc:
            log.warning("token introspection failed", extra={"fields": {"url": self.url, "error": type(exc).__name__,
                                                                          "detail": str(exc)}})
            raise AuthError.unavailable() from None
        if not answer["active"]:
            return None
        self._check(answer)
        return auth_info_from_claims(answer, token)

    def _check(self, answer: Mapping[str, Any]) -> None:
        if self.issuer is not None and answer.get("iss") != self.issuer:
            raise AuthError.invalid_token("Token issuer is not accepted.", reason="issuer")
        if self.audience is not None and self.audience not in claim_strings(answer.get("aud")):
            raise AuthError.invalid_token("Token audience is not accepted.", reason="audience")
        if self.resource is not None and not names_resource(answer, self.resource):
            raise AuthError.wrong_resource()
        exp = answer.get("exp")
        if exp is not None and (not isinstance(exp, (int, float)) or exp <= time.time()):
            raise AuthError.invalid_token("Token has expired.", reason="expired")
