"""``RateLimit``: at most N calls per window for each identity, tenant or tool.

With ``backend="redis"`` the window is shared by every instance on the same Redis, so a limit of
10 per second holds for the whole deployment, however a load balancer spreads the calls. A call
over the limit is refused with ``RateLimited`` (-32003, HTTP's 429) and a retry hint: an
``isError`` result for ``tools/call``, a JSON-RPC error elsewhere, ``data.retryAfterMs`` in
both. When Redis cannot be reached the limiter fails open (calls go through, a warning is
logged at most once a minute) or, with ``fail="closed"``, refuses with ``ServiceUnavailable``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigurationError, JsonRpcErrorCode, McpError
from ..metrics import count_rate_limited
from ..protocol.methods import METHODS
from .base import Call, CallNext, Middleware
from .windows import MemoryWindows, RedisWindows, Windows

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["RateLimit", "caller_key"]

log = logging.getLogger("mcpcore.ratelimit")

KeyPart = Literal["identity", "tenant", "tool", "method"]
KeyFunction = Callable[[Call], str | None]
_WARN_EVERY = 60.0
_NAMING = frozenset(m.name for m in METHODS if m.names is not None)


def caller_key(call: Call) -> str:
    """Who is calling: the token's tenant, client and subject when authenticated; else, over
    HTTP, the peer's address; else (stdio) one caller."""
    auth = call._req.auth
    if auth is not None:
        return f"id:{auth.tenant_id or ''}:{auth.client_id}:{auth.subject or ''}"
    scope = call._req.asgi_scope
    client = scope.get("client") if scope is not None else None
    return f"ip:{client[0]}" if client else "local"


def _part(call: Call, part: KeyPart) -> str:
    if part == "identity":
        return caller_key(call)
    if part == "tenant":
        return f"tenant:{call._req.tenant_id or ''}"
    if part == "tool":
        d = call.definition  # a name the caller cannot call is its own string: one key for all of them
        if d is not None:
            return f"name:{d.uri if call.method.startswith('resources/') else d.name}"
        return "unknown" if call.method in _NAMING else "name:"
    return f"method:{call.method}"


class RateLimit(Middleware):
    """Refuse calls past ``limit`` per ``per`` seconds for each key.

    Args:
        limit: calls admitted per window and key.
        per: the window, in seconds (sliding: no window of this length holds more than ``limit``).
        key: what shares a window: ``"identity"`` (default), ``"tenant"``, ``"tool"`` (the tool,
            prompt or resource called, a template for every URI it serves; every name the caller
            cannot call, unknown or hidden, shares one window), ``"method"``, a tuple of those
            (``("identity", "tool")``: each caller's each tool), or a function of the
            :class:`Call` returning the key (``None``: not limited).
        methods: the methods limited (default ``tools/call``); ``None`` for every request.
        backend: ``"memory"`` (this process) or ``"redis"`` (every instance; the app's Redis
            client when it has one, else one made from ``REDIS_URL`` and ``MCP_REDIS_*``).
        fail: ``"open"`` (admit while Redis is away) or ``"closed"`` (refuse with 503).
        windows: a ready :class:`~mcpcore.middleware.windows.Windows` (tests, other stores).
        name: this limiter's part of the Redis keys (two limiters on one key need two names).
    """

    def __init__(self, limit: int, per: float = 1.0, *,
                 key: KeyPart | Sequence[KeyPart] | KeyFunction = "identity",
                 methods: Sequence[str] | None = ("tools/call",), backend: Literal["memory", "redis"] = "memory",
                 fail: Literal["open", "closed"] = "open", windows: Windows | None = None,
                 name: str = "default") -> None:
        if not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"RateLimit limit must be an integer >= 1, got {limit!r}")
        if not per > 0:
            raise ConfigurationError(f"RateLimit per must be > 0 seconds, got {per!r}")
        if backend not in ("memory", "redis") or fail not in ("open", "closed"):
            raise ConfigurationError("RateLimit backend is 'memory' or 'redis', fail is 'open' or 'closed'")
        self.limit = limit
        self.window_ms = max(1, int(per * 1000))
        self.methods = frozenset(methods) if methods is not None else None
        self.backend = backend
        self.fail = fail
        self.name = name
        self._key = self._key_function(key)
        self.windows: Windows | None = windows if windows is not None else (
            MemoryWindows() if backend == "memory" else None)
        self._owned: Any = None
        self._warned = -_WARN_EVERY

    @staticmethod
    def _key_function(key: KeyPart | Sequence[KeyPart] | KeyFunction) -> KeyFunction:
        if callable(key):
            return key
        parts: tuple[KeyPart, ...] = (key,) if isinstance(key, str) else tuple(key)
        for part in parts:
            if part not in ("identity", "tenant", "tool", "method"):
                raise ConfigurationError(f"RateLimit key {part!r} is not identity, tenant, tool or method")
        return lambda call: "|".join(_part(call, p) for p in parts)

    async def startup(self, settings: Settings, redis: Any = None) -> None:
        """Open the Redis windows (the app's client, or one of our own)."""
        if self.windows is not None:
            return
        if redis is None:
            from ..redis_client import create_redis_client

            redis = self._owned = create_redis_client(settings, needed_by="RateLimit(backend='redis')")
        self.windows = RedisWindows(redis, f"mcpcore:rl:{self.name}")

    async def shutdown(self) -> None:
        """Close the Redis client this limiter made."""
        if self._owned is not None:
            client, self._owned = self._owned, None
            self.windows = None
            await client.aclose()

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        if self.methods is None or call.method in self.methods:
            key = self._key(call)
            if key is not None:
                await self._admit(key)
        return await call_next(call)

    async def _admit(self, key: str) -> None:
        windows = self.windows
        if windows is None:
            raise RuntimeError("RateLimit(backend='redis') was not started (the app starts it)")
        if len(key) > 128:
            key = "h:" + hashlib.sha256(key.encode()).hexdigest()
        try:
            wait_ms = await windows.hit(key, self.limit, self.window_ms)
        except McpError as exc:
            if exc.code != JsonRpcErrorCode.ServiceUnavailable:
                raise
            if self.fail == "closed":
                raise McpError(JsonRpcErrorCode.ServiceUnavailable, "The rate limiter's store is unreachable; "
                               "retry shortly.", {"reason": "rate_limiter_unavailable", "retryAfterMs": 1000,
                                                  "recovery": {"hint": "Retry in a second."}}) from exc
            now = time.monotonic()
            if now - self._warned >= _WARN_EVERY:
                self._warned = now
                log.warning("the rate limiter's Redis is unreachable; admitting calls unlimited (fail='open')")
            return
        if wait_ms:
            count_rate_limited(self.name)
            seconds = wait_ms / 1000
            raise McpError(JsonRpcErrorCode.RateLimited,
                           f"Rate limit exceeded: at most {self.limit} calls per {self.window_ms / 1000:g} s.",
                           {"reason": "rate_limited", "retryAfterMs": wait_ms, "limit": self.limit,
                            "windowMs": self.window_ms,
                            "recovery": {"hint": f"Wait {seconds:.3g} s before calling again."}})
