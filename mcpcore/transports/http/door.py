"""The layers at the HTTP door, run before a byte of the body is read, then the body's.

Each door layer's ``door(headers, send)`` answers the request itself and returns ``None``, or
returns the ``send`` the rest of the request uses (CORS wraps it). The endpoint runs them in
stack order: :class:`HostOriginGuard`, :class:`CorsPolicy`, :class:`Authentication` (only when
the app has auth). :class:`BodyLimit` then reads and parses the body of a POST.
"""

from __future__ import annotations

import enum
import logging
from typing import Any, Final, Literal

from ... import _json
from ...asgi_types import Receive, Scope, Send
from ...auth import AuthError
from ...auth.base import Authenticator
from ...config import Settings
from ...context import AuthInfo
from ...errors import JsonRpcErrorCode
from ...layer import Layer, qualified
from ...protocol.jsonrpc import too_deep
from ...protocol.limits import SHORTEST_BOUND
from ..authn import authenticate, refuse
from ..cors import Cors
from ..guard import BodyTooLarge, OriginGuard, accepts, read_body
from .wire import ACCEPT_BOTH, RequestHeaders, error, replay

__all__ = ["ANSWERED", "Authentication", "BodyLimit", "CorsPolicy", "HostOriginGuard"]

log = logging.getLogger("mcpcore.transport")


class _Answered(enum.Enum):
    SENT = 1


ANSWERED: Final = _Answered.SENT
"""What :meth:`BodyLimit.read` returns when it answered the request itself."""


class HostOriginGuard(Layer):
    """A foreign ``Host`` or ``Origin`` is answered 403 (DNS rebinding, cross-site pages)."""

    title = "host and origin guard"

    def __init__(self, settings: Settings) -> None:
        self.guard = OriginGuard((*settings.allowed_origins, *settings.cors_allowed_origins),
                                 settings.allowed_hosts)

    def reason(self, scope: Scope, host: str | bytes | None, origin: str | bytes | None) -> str | None:
        """Why the request is refused, or ``None``."""
        return self.guard.check(scope, host, origin)

    async def door(self, headers: RequestHeaders, send: Send) -> Send | None:
        reason = self.guard.check(headers.scope, headers.get(b"host"), headers.get(b"origin"))
        if reason is None:
            return send
        log.warning("refused request: %s", reason)
        await error(send, 403, JsonRpcErrorCode.InvalidRequest, f"Forbidden: {reason}.")
        return None


class CorsPolicy(Layer):
    """Preflights (``OPTIONS``) answered, and an allowed origin's responses given the CORS
    headers (``MCP_CORS_ALLOWED_ORIGINS``; off, a preflight grants nothing)."""

    title = "cors"

    def __init__(self, settings: Settings) -> None:
        self.cors = Cors(settings.cors_allowed_origins)

    async def door(self, headers: RequestHeaders, send: Send) -> Send | None:
        if headers.scope["method"] == "OPTIONS":
            await self.cors.preflight(headers, send)
            return None
        if self.cors.origins and b"origin" in headers:
            return self.cors.wrap(headers[b"origin"], send)
        return send


class Authentication(Layer):
    """The bearer token becomes the request's identity (``ctx.auth``, ``ctx.tenant_id``);
    a missing or bad one is answered 401 or 403 with the challenge. The authenticator is the
    one ``MCP_AUTH_MODE`` names or the app's ``auth=`` (a ``TokenVerifier`` of your own)."""

    title = "auth"

    def __init__(self, authenticator: Authenticator, settings: Settings) -> None:
        self.authenticator = authenticator
        self.settings = settings

    def where(self) -> str:
        return qualified(getattr(self.authenticator, "verifier", self.authenticator))

    async def startup(self, settings: Settings, redis: Any = None) -> None:
        await self.authenticator.start()

    async def shutdown(self) -> None:
        await self.authenticator.close()

    async def verify(self, scope: Scope, send: Send, host: str | None) -> AuthInfo | Literal[_Answered.SENT] | None:
        """The caller's identity, or :data:`ANSWERED` after answering the refusal."""
        try:
            return await authenticate(self.authenticator, scope)
        except AuthError as exc:
            await refuse(self.settings, scope, send, host, exc)
            return ANSWERED

    async def door(self, headers: RequestHeaders, send: Send) -> Send | None:
        scope = headers.scope
        if scope["method"] not in ("POST", "GET", "DELETE"):
            return send
        try:
            headers.auth = await authenticate(self.authenticator, scope)
        except AuthError as exc:
            await refuse(self.settings, scope, send, headers.text(b"host"), exc)
            return None
        return send


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
            await error(send, 400, JsonRpcErrorCode.InvalidRequest,
                        f"Bad Request: JSON nested deeper than {self.max_depth} levels.")
            return ANSWERED
        return msg

    async def _too_large(self, send: Send) -> Literal[_Answered.SENT]:
        await error(send, 413, JsonRpcErrorCode.InvalidRequest, f"Payload Too Large: the limit is {self.limit} bytes.")
        return ANSWERED
