"""What DPoP remembers across requests: the proofs already used (``jti``) and the server's nonces.

- :class:`MemoryReplayCache` / :class:`RedisReplayCache`: a proof is accepted once. With the
  app's stores in Redis (``MCP_SESSION_STORE=redis``) every instance shares the one in Redis
  (``SET NX PX``: the first instance to see a proof wins), so a proof replayed on another
  instance is refused too; otherwise each process keeps its own, bounded.
- :class:`Nonces`: server-provided nonces (RFC 9449 §9) that every instance issues and accepts
  without a store: an HMAC-SHA256 (``MCP_AUTH_DPOP_NONCE_KEY``) of the current time window. A
  nonce is valid in its window and the next one, so a client is asked for a new one at most once
  per window; the answers of a request whose nonce is about to lapse carry the next one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..redis_client import UNAVAILABLE
from .errors import AuthError

__all__ = ["MIN_NONCE_KEY_LENGTH", "MemoryReplayCache", "Nonces", "RedisReplayCache", "ReplayCache"]

log = logging.getLogger("mcpcore.auth")
MIN_NONCE_KEY_LENGTH = 32


class ReplayCache(Protocol):
    """Remembers keys for a while."""

    async def first_use(self, key: str, ttl: float) -> bool:
        """Remember ``key`` for ``ttl`` seconds; ``False`` when it was already remembered.

        Raises:
            AuthError: 503 when the cache cannot answer (the proof is neither accepted nor refused).
        """
        ...


class MemoryReplayCache:
    """This process's replay cache: at most ``max_entries`` keys; past that the oldest are
    forgotten (a warning is logged), leaving those proofs to the ``iat`` window alone."""

    def __init__(self, max_entries: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._seen: dict[str, float] = {}
        self._warned = False

    def __len__(self) -> int:
        return len(self._seen)

    async def first_use(self, key: str, ttl: float) -> bool:
        now = self._clock()
        until = self._seen.get(key)
        if until is not None and until > now:
            return False
        if len(self._seen) >= self.max_entries:
            self._prune(now)
        self._seen[key] = now + ttl
        return True

    def _prune(self, now: float) -> None:
        for k in [k for k, until in self._seen.items() if until <= now]:
            del self._seen[k]
        while len(self._seen) >= self.max_entries:  # insertion order is expiry order (one ttl)
            del self._seen[next(iter(self._seen))]
            if not self._warned:
                self._warned = True
                log.warning("the DPoP replay cache is full (%d proofs); the oldest are forgotten early: use "
                            "MCP_SESSION_STORE=redis to share a larger one", self.max_entries)


class RedisReplayCache:
    """The replay cache every instance shares: one key per proof, expiring with it."""

    def __init__(self, redis: Any, prefix: str = "mcpcore:dpop:jti:") -> None:
        self.redis = redis
        self.prefix = prefix

    async def first_use(self, key: str, ttl: float) -> bool:
        try:
            stored = await self.redis.set(self.prefix + key, b"1", nx=True, px=max(1, int(ttl * 1000)))
        except UNAVAILABLE as exc:
            log.warning("the DPoP replay cache (Redis) is unreachable; answering 503",
                        extra={"fields": {"error": type(exc).__name__}})
            raise AuthError.unavailable() from None
        return bool(stored)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class Nonces:
    """Server nonces from a shared secret (see the module docstring).

    Args:
        key: ``MCP_AUTH_DPOP_NONCE_KEY``, at least 32 characters, the same on every instance.
        period: seconds of one window.
        clock: wall-clock seconds (tests).

    Raises:
        ValueError: a key shorter than 32 characters.
    """

    def __init__(self, key: str | bytes, period: float = 300.0, clock: Callable[[], float] = time.time) -> None:
        raw = key.encode() if isinstance(key, str) else bytes(key)
        if len(raw) < MIN_NONCE_KEY_LENGTH:
            raise ValueError(f"MCP_AUTH_DPOP_NONCE_KEY must be at least {MIN_NONCE_KEY_LENGTH} characters")
        self._key = hashlib.sha256(b"mcpcore dpop nonce\x00" + raw).digest()
        self.period = max(1.0, period)
        self._clock = clock

    def __repr__(self) -> str:
        return f"Nonces(period={self.period}, key='**********')"

    def _window(self) -> int:
        return int(self._clock() // self.period)

    def _for(self, window: int) -> str:
        stamp = window.to_bytes(8, "big")
        return f"{_b64(stamp)}.{_b64(hmac.new(self._key, stamp, hashlib.sha256).digest()[:18])}"

    def fresh(self) -> str:
        """The nonce of the current window."""
        return self._for(self._window())

    def state(self, nonce: str) -> str | None:
        """``"current"``, ``"previous"`` (valid, about to lapse) or ``None`` (not valid)."""
        now = self._window()
        for window, name in ((now, "current"), (now - 1, "previous")):
            if hmac.compare_digest(nonce.encode("latin-1", "replace"), self._for(window).encode()):
                return name
        return None
