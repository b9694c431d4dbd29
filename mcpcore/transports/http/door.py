"""The layers at the HTTP door, run before a byte of the body is read, then the body's.

A door layer's ``door(headers, send)`` is called for every request, synchronously: it returns
``None`` to let the request pass untouched, or the awaitable of what it does to it, which gives
the ``send`` the rest of the request uses (CORS wraps it), or ``None`` when the layer answered.
So a layer with nothing to do costs a call, not a coroutine. The endpoint runs them in stack
order: :class:`HostOriginGuard`, :class:`CorsPolicy` (only with ``MCP_CORS_ALLOWED_ORIGINS``),
:class:`Authentication` (only when the app has auth). :class:`BodyLimit` then reads and parses
the body of a POST.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from ... import _json
from ...asgi_types import Message, Receive, Scope, Send
from ...auth import AuthError
from ...auth.base import Authenticator
from ...config import Settings
from ...context import AuthInfo
from ...errors import JsonRpcErrorCode
from ...layer import Layer, qualified
from ...metrics import hit_ceiling
from ...protocol.jsonrpc import too_deep
from ...protocol.limits import SHORTEST_BOUND
from ..authn import authenticate, refuse
from ..cors import Cors
from ..guard import BodyTooLarge, OriginGuard, accepts, read_body
from .wire import ACCEPT_BOTH, ANSWERED, Answered, RequestHeaders, error, replay

__all__ = ["ANSWERED", "Authentication", "BodyLimit", "CorsPolicy", "DoorAction", "HostOriginGuard"]

log = logging.getLogger("mcpcore.transport")


DoorAction = Awaitable["Send | None"]
"""What a door layer does to a request: gives the ``send`` to go on with, or ``None`` (answered)."""


class HostOriginGuard(Layer):
    """A foreign ``Host`` or ``Origin`` is answered 403 (DNS rebinding, cross-site pages)."""

    title = "host and origin guard"

    def __init__(self, settings: Settings) -> None:
        self.guard = OriginGuard((*settings.allowed_origins, *settings.cors_allowed_origins),
                                 settings.allowed_hosts)

    def reason(self, scope: Scope, host: str | bytes | None, origin: str | bytes | None) -> str | None:
        """Why the request is refused, or ``None``."""
        return self.guard.check(scope, host, origin)

    def door(self, headers: RequestHeaders, send: Send) -> DoorAction | None:
        reason = self.guard.check(headers.scope, headers.get(b"host"), headers.get(b"origin"))
        return None if reason is None else self._refuse(send, reason)

    async def _refuse(self, send: Send, reason: str) -> None:
        log.warning("refused request: %s", reason)
        await error(send, 403, JsonRpcErrorCode.InvalidRequest, f"Forbidden: {reason}.")


class CorsPolicy(Layer):
    """An allowed origin's responses given the CORS headers (``MCP_CORS_ALLOWED_ORIGINS``), and
    preflights (``OPTIONS``) answered: the endpoint hands them to :meth:`preflight` (off, a
    preflight grants nothing). At the door only when origins are configured."""

    title = "cors"

    def __init__(self, settings: Settings) -> None:
        self.cors = Cors(settings.cors_allowed_origins)

    @property
    def active(self) -> bool:
        """Whether some origin is allowed (else the layer has nothing to do at the door)."""
        return bool(self.cors.origins or self.cors.any)

    def door(self, headers: RequestHeaders, send: Send) -> DoorAction | None:
        origin = headers.get(b"origin")
        if origin is None or headers.scope["method"] == "OPTIONS":  # a preflight carries its own grant
            return None
        return self._wrap(origin, send)

    async def _wrap(self, origin: bytes, send: Send) -> Send:
        return self.cors.wrap(origin, send)

    async def preflight(self, headers: RequestHeaders, send: Send) -> None:
        """Answer ``OPTIONS``: the allowed methods, and for an allowed origin the CORS grant."""
        await self.cors.preflight(headers, send)


class Authentication(Layer):
    """The caller becomes the request's identity (``ctx.auth``, ``ctx.tenant_id``): the host
    app's user (``HostIdentity``) or the bearer token (with its DPoP proof under
    ``MCP_AUTH_DPOP``); a missing or bad one is answered 401 or 403 with the challenge. The
    authenticator is the one the settings name or the app's ``auth=``.

    A host identity known without waiting passes at the door with no coroutine at all."""

    title = "auth"

    def __init__(self, authenticator: Authenticator, settings: Settings) -> None:
        self.authenticator = authenticator
        self.settings = settings
        self.now: Callable[[Scope], AuthInfo | None] | None = getattr(authenticator, "identify_now", None)
        self.rest: Callable[[Scope], Awaitable[AuthInfo]] | None = getattr(authenticator, "authenticate_tokens", None)
        fresh = getattr(authenticator, "fresh_nonce", None) or getattr(
            getattr(authenticator, "tokens", None), "fresh_nonce", None)
        self.nonce: Callable[[], str | None] | None = fresh if callable(fresh) and fresh() is not None else None
        if getattr(authenticator, "door_shortcut_ready", False):  # the host's users seen before, in one call
            self.door = authenticator.door_shortcut(self.door)  # type: ignore[attr-defined,method-assign]

    def where(self) -> str:
        return qualified(getattr(self.authenticator, "verifier", self.authenticator))

    async def startup(self, settings: Settings, redis: Any = None) -> None:
        share = getattr(self.authenticator, "share", None)
        if redis is not None and share is not None:
            share(redis)
        await self.authenticator.start()

    async def shutdown(self) -> None:
        await self.authenticator.close()

    async def verify(self, scope: Scope, send: Send, host: str | None) -> AuthInfo | Literal[Answered.SENT] | None:
        """The caller's identity, or :data:`ANSWERED` after answering the refusal."""
        try:
            return await authenticate(self.authenticator, scope)
        except AuthError as exc:
            await refuse(self.settings, scope, send, host, exc)
            return ANSWERED

    def door(self, headers: RequestHeaders, send: Send) -> DoorAction | None:
        if headers.scope["method"] not in ("POST", "GET", "DELETE"):
            return None
        if self.now is not None:
            try:
                info = self.now(headers.scope)
            except AuthError as exc:
                return self._refuse(headers, send, exc)
            if info is not None:
                headers.auth = info
                return None
            if self.rest is not None:
                return self._tokens(headers, send, self.rest)
        return self._admit(headers, send)

    async def _admit(self, headers: RequestHeaders, send: Send) -> Send | None:
        auth = await self.verify(headers.scope, send, headers.text(b"host"))
        if auth is ANSWERED:
            return None
        headers.auth = auth
        return send if self.nonce is None else _with_nonce(send, self.nonce)

    async def _tokens(self, headers: RequestHeaders, send: Send,
                      check: Callable[[Scope], Awaitable[AuthInfo]]) -> Send | None:
        try:
            headers.auth = await check(headers.scope)
        except AuthError as exc:
            await refuse(self.settings, headers.scope, send, headers.text(b"host"), exc)
            return None
        return send if self.nonce is None else _with_nonce(send, self.nonce)

    async def _refuse(self, headers: RequestHeaders, send: Send, exc: AuthError) -> None:
        await refuse(self.settings, headers.scope, send, headers.text(b"host"), exc)


def _with_nonce(send: Send, fresh: Callable[[], str | None]) -> Send:
    """``send`` whose answer carries the DPoP nonce to use next (RFC 9449 §9)."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            nonce = fresh()
            if nonce is not None:
                message = {**message, "headers": [*message.get("headers", ()), (b"dpop-nonce", nonce.encode())]}
        await send(message)
    return sending


class BodyLimit(Layer):
    """A POST's body: media types (415, 406), at most ``MCP_HTTP_MAX_BODY_BYTES`` (413), valid
    JSON (400) nested at most ``MCP_MAX_JSON_DEPTH`` deep (400)."""

    title = "body limit"

    def __init__(self, settings: Settings) -> None:
        self.limit = settings.max_body_bytes
        self.limit_digits = len(str(settings.max_body_bytes))  # a shorter Content-Length is within the limit
        self.max_depth = settings.max_json_depth
        self.depth_floor = 2 * settings.max_json_depth  # a shorter body cannot nest that deep

    async def read(self, receive: Receive, send: Send, headers: RequestHeaders) -> Any:
        """The parsed body, or :data:`ANSWERED` when it was refused (or the client left)."""
        ctype = headers.get(b"content-type", b"")
        if ctype != b"application/json" and ctype.split(b";", 1)[0].strip().lower() != b"application/json":
            await error(send, 415, JsonRpcErrorCode.InvalidRequest, "Unsupported Media Type: use application/json.")
            return ANSWERED
        accept = headers.get(b"accept")
        if accept not in ACCEPT_BOTH and not accepts(accept, "application/json", "text/event-stream"):
            await error(send, 406, JsonRpcErrorCode.InvalidRequest,
                        "Not Acceptable: Accept must list application/json and text/event-stream.")
            return ANSWERED
        length = headers.get(b"content-length")
        if self.limit and length is not None and len(length) >= self.limit_digits and length.isdigit() and \
                int(length) > self.limit:
            return await self._too_large(send)
        try:
            message = await receive()
            if message["type"] != "http.request" or message.get("more_body"):  # streamed in parts
                body = await read_body(replay(message, receive), self.limit, None)
                if body is None:
                    return ANSWERED
            else:
                body = message.get("body", b"")
                if self.limit and len(body) > self.limit:
                    raise BodyTooLarge
        except BodyTooLarge:
            return await self._too_large(send)
        if len(body) > SHORTEST_BOUND:
            headers.long_body = True
        try:
            msg = _json.loads(body)
        except _json.JSONDecodeError:
            await error(send, 400, JsonRpcErrorCode.ParseError, "Parse error: the body is not valid JSON.")
            return ANSWERED
        if len(body) > self.depth_floor and len(body) - len(body.translate(None, b"{[")) > self.max_depth and \
                too_deep(msg, self.max_depth):
            hit_ceiling("json_depth")
            await error(send, 400, JsonRpcErrorCode.InvalidRequest,
                        f"Bad Request: JSON nested deeper than {self.max_depth} levels.")
            return ANSWERED
        return msg

    async def _too_large(self, send: Send) -> Literal[Answered.SENT]:
        hit_ceiling("body_size")
        await error(send, 413, JsonRpcErrorCode.InvalidRequest, f"Payload Too Large: the limit is {self.limit} bytes.")
        return ANSWERED
