"""What the dispatcher answers a request with, as a value the transport reads.

A result is the serialised response (``bytes``). A JSON-RPC error is an :class:`ErrorAnswer`:
the same serialised response, carrying the class of its error (:class:`ErrorClass`), which is
all a transport needs to choose its HTTP status. Nothing about the outcome is written on the
request's :class:`~mcpcore.context.Inbound`.
"""

from __future__ import annotations

import enum

from ..errors import JsonRpcErrorCode, McpError

__all__ = ["ErrorAnswer", "ErrorClass", "error_class"]


class ErrorClass(enum.Enum):
    """How a transport answers a JSON-RPC error (what HTTP status it takes)."""

    PLAIN = "plain"
    """Answered as any response (HTTP 200)."""
    UNKNOWN_METHOD = "unknown_method"
    """The method is not served (HTTP 404 on 2026-07-28, 200 on a 2025 session)."""
    BAD_REQUEST = "bad_request"
    """The request's headers, revision or declared capabilities do not allow it (HTTP 400 on
    2026-07-28, 200 on a 2025 session)."""
    UNAVAILABLE = "unavailable"
    """A store or capacity the request needs is unavailable (HTTP 503)."""
    UNAUTHORIZED = "unauthorized"
    """The credentials are missing or unusable (HTTP 401 with a challenge)."""
    INSUFFICIENT_SCOPE = "insufficient_scope"
    """The token lacks a scope the call needs (HTTP 403 with a challenge)."""


_BY_CODE: dict[int, ErrorClass] = {
    JsonRpcErrorCode.MethodNotFound: ErrorClass.UNKNOWN_METHOD,
    JsonRpcErrorCode.HeaderMismatch: ErrorClass.BAD_REQUEST,
    JsonRpcErrorCode.MissingRequiredClientCapability: ErrorClass.BAD_REQUEST,
    JsonRpcErrorCode.UnsupportedProtocolVersion: ErrorClass.BAD_REQUEST,
    JsonRpcErrorCode.ServiceUnavailable: ErrorClass.UNAVAILABLE,
    JsonRpcErrorCode.Unauthorized: ErrorClass.UNAUTHORIZED,
}


def error_class(err: McpError) -> ErrorClass:
    """The class of ``err``: a ``Forbidden`` error whose ``data.reason`` is
    ``insufficient_scope`` is :attr:`ErrorClass.INSUFFICIENT_SCOPE`; other codes by the table."""
    code = err.code
    if code == JsonRpcErrorCode.Forbidden:
        reason = err.data.get("reason") if err.data else None
        return ErrorClass.INSUFFICIENT_SCOPE if reason == "insufficient_scope" else ErrorClass.PLAIN
    return _BY_CODE.get(code, ErrorClass.PLAIN)


class ErrorAnswer(bytes):
    """A serialised JSON-RPC error response and the :class:`ErrorClass` of its error.

    It is ``bytes`` (the response as it goes on the wire), so a transport that has no status to
    choose (stdio, a batch's part) writes it as it writes a result; an HTTP transport tells it
    apart with ``type(answer) is ErrorAnswer`` and reads :attr:`error_class`.
    """

    error_class: ErrorClass

    def __new__(cls, body: bytes, error_class: ErrorClass) -> ErrorAnswer:
        answer = super().__new__(cls, body)
        answer.error_class = error_class
        return answer

    def __repr__(self) -> str:
        return f"ErrorAnswer({self.error_class.value}, {bytes(self)!r})"
