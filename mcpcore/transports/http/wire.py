"""What every part of the HTTP transport shares: the request's headers, the app-wide
constants, JSON-RPC error answers and the one table of HTTP statuses."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final

from ...asgi_types import Message, Receive, Scope, Send
from ...auth import AuthError
from ...context import AuthInfo
from ...errors import error_object
from ...protocol.jsonrpc import error_response
from ...protocol.outcome import ErrorAnswer, ErrorClass
from ...protocol.versions import LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS, Era
from ...runtime import Runtime
from ...server.dispatcher import Dispatcher
from ..buffering import EventBuffering
from ..exchange import json_response

__all__ = ["ACCEPT_BOTH", "ANSWERED", "LEGACY_VERSION_BYTES", "MODERN_VERSION_BYTES", "SUPPORTED_VERSION_BYTES",
           "Answered", "HttpContext", "RequestHeaders", "accepted", "error", "error_object", "http_status", "replay",
           "trace"]


class Answered(enum.Enum):
    """The type of :data:`ANSWERED`."""

    SENT = 1


ANSWERED: Final = Answered.SENT
"""What a step returns when it answered the request itself (refused it, found no session, or
the client left): the door's layers and the session lookup alike."""

MODERN_VERSION_BYTES = frozenset(v.encode() for v in MODERN_VERSIONS)
LEGACY_VERSION_BYTES = frozenset(v.encode() for v in LEGACY_VERSIONS)
SUPPORTED_VERSION_BYTES = frozenset(v.encode() for v in SUPPORTED_VERSIONS)
ACCEPT_BOTH = frozenset({b"application/json, text/event-stream", b"application/json,text/event-stream",
                         b"text/event-stream, application/json", b"text/event-stream,application/json"})


class RequestHeaders(dict[bytes, bytes]):
    """The request's headers as the ASGI server sent them (lower-cased names, raw values; the
    last of a repeated header), decoded only where read, and the identity its token proved.

    Kept as bytes because decoding every header of every request costs more than the rest of
    the request's header handling together."""

    __slots__ = ("__dict__", "auth", "scope")  # slots: no instance dict for every request

    scope: Scope
    """The request's ASGI scope (what ``ctx.http`` shows), set at the door."""
    auth: AuthInfo | None
    """The caller's identity (``None`` until the auth layer sets it; set by the endpoint)."""
    long_body = False
    """Whether the body is long enough to hold a string past the bounds of
    :mod:`mcpcore.protocol.limits` (a shorter one cannot, so its requests skip those checks)."""

    def text(self, name: bytes) -> str | None:
        """The header's value as text (latin-1, as HTTP defines it), or ``None``."""
        value = self.get(name)
        return value.decode("latin-1") if value is not None else None

    def version_ok(self) -> bool:
        """Whether ``MCP-Protocol-Version`` is absent or names a revision this server speaks."""
        pv = self.get(b"mcp-protocol-version")
        return pv is None or pv in SUPPORTED_VERSION_BYTES or pv.strip() in SUPPORTED_VERSION_BYTES


@dataclass(slots=True, eq=False)
class HttpContext:
    """The app-wide parts and constants every part of the HTTP transport reads."""

    rt: Runtime
    dispatcher: Dispatcher
    mode: str
    keepalive_s: float
    queue_max: int
    buffering: EventBuffering
    """The event buffer layer: where a session's streams are kept for resumption."""


async def error(send: Send, status: int, code: int, message: str, rid: Any = None,
                headers: list[tuple[bytes, bytes]] | None = None, data: dict[str, Any] | None = None) -> None:
    """Answer with a JSON-RPC error and ``status``."""
    await json_response(send, status, error_response(rid, error_object(code, message, data)), headers)


# The one place where the class of a JSON-RPC error becomes an HTTP status, per era: on a 2025
# session only an unavailable store is not answered 200.
_MODERN_STATUS = {
    ErrorClass.UNKNOWN_METHOD: 404,
    ErrorClass.BAD_REQUEST: 400,
    ErrorClass.UNAVAILABLE: 503,
}
_SESSION_STATUS = {ErrorClass.UNAVAILABLE: 503}
_UNAUTHORIZED = [(b"www-authenticate", b'Bearer realm="mcp"')]


def http_status(answer: bytes, era: Era) -> tuple[int, list[tuple[bytes, bytes]]]:
    """``(status, extra headers)`` of the dispatcher's ``answer`` on ``era`` (200 and none for a
    result, or an error that takes no other status).

    A missing scope is 403 with a challenge naming no scope, an unusable token 401; on
    2026-07-28 an unknown method is 404 and the revision's header and capability errors 400;
    an unreachable store is 503."""
    if type(answer) is not ErrorAnswer:
        return 200, []
    kind = answer.error_class
    if kind is ErrorClass.INSUFFICIENT_SCOPE:
        challenge = AuthError.insufficient_scope(()).www_authenticate(None, include_scope=False) or "Bearer"
        return 403, [(b"www-authenticate", challenge.encode())]
    if kind is ErrorClass.UNAUTHORIZED:
        return 401, _UNAUTHORIZED
    return (_MODERN_STATUS if era is Era.MODERN else _SESSION_STATUS).get(kind, 200), []


async def accepted(send: Send) -> None:
    """``202 Accepted`` with no body (a notification or a client's answer)."""
    await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


def replay(first: Message, receive: Receive) -> Receive:
    """``receive`` with ``first``, already taken, given back first."""
    pending: list[Message] = [first]

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again


def trace(headers: RequestHeaders) -> dict[str, str] | None:
    """The W3C trace context the request carries."""
    tp = headers.text(b"traceparent")
    if tp is None:
        return None
    out = {"traceparent": tp}
    state = headers.text(b"tracestate")
    if state is not None:
        out["tracestate"] = state
    return out
