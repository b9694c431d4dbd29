"""Errors of mcpcore and how they reach the wire.

Hierarchy::

    Exception
     ├── McpError                 a JSON-RPC error with a code, message and data; the one error
     │    │                       type handlers raise on purpose (factories below build it)
     │    └── MethodError         a method's own error on its way out through middleware
     └── ConfigurationError       a mistake in definitions or settings, raised at decoration or
                                  startup time and never sent to a client

``ctx.request_input`` raises ``InputRequired`` (in :mod:`mcpcore.context.inputs`), which is a signal,
not an error: it derives from ``BaseException`` (as ``asyncio.CancelledError`` does), so a handler's
``except Exception`` cannot swallow it, and it never reaches the classifier below.

Exactly one place turns an arbitrary exception into a wire error: :func:`classify`. A tool turns
the result into an ``isError`` result (the envelope under ``_meta[TOOL_ERROR_META]``); every other
method into a JSON-RPC error response.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Protocol

__all__ = [
    "ERROR_CONTRACT_META",
    "QUOTE_MAX",
    "RESOURCE_NOT_FOUND",
    "TOOL_ERROR_META",
    "ConfigurationError",
    "ErrorContract",
    "Fail",
    "JsonRpcErrorCode",
    "McpError",
    "MethodError",
    "classify",
    "conflict",
    "contract_failure",
    "error_object",
    "forbidden",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "method_not_found",
    "not_found",
    "quoted",
    "rate_limited",
    "resource_not_found",
    "serialization_error",
    "service_unavailable",
    "timeout",
    "unauthorized",
    "validation_error",
    "with_recovery",
]


QUOTE_MAX = 100
"""Characters of a caller's string an error message (or a log line) may quote."""


def quoted(value: object, limit: int = QUOTE_MAX) -> str:
    """``value``, a string a caller chose (a name, a URI, a header), as an error message or a
    log line may quote it: at most ``limit`` characters, ``…`` marking a cut. Anything that is
    not a string is quoted by its ``repr``, cut the same way."""
    text = value if type(value) is str else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


TOOL_ERROR_META = "dev.mcpcore/error"
"""The ``_meta`` key of an ``isError`` tool result that carries the error envelope
(``{"code", "message", "data"}``); see docs/errors.md for why it is not ``structuredContent``."""


ERROR_CONTRACT_META = "dev.mcpcore/errors"
"""The ``_meta`` key of a tool in ``tools/list`` that advertises its ``errors=[...]`` contract: a list
of ``{"reason", "code", "when", "recovery", "retryable"?}`` (:meth:`ErrorContract.to_json`)."""


class JsonRpcErrorCode(IntEnum):
    """JSON-RPC and MCP error codes, with the reference framework's application codes."""

    ParseError = -32700
    InvalidRequest = -32600
    MethodNotFound = -32601
    InvalidParams = -32602
    InternalError = -32603
    ServiceUnavailable = -32000
    NotFound = -32001
    Conflict = -32002
    RateLimited = -32003
    Timeout = -32004
    Forbidden = -32005
    Unauthorized = -32006
    ValidationError = -32007
    ConfigurationError = -32008
    InitializationFailed = -32009
    DatabaseError = -32010
    RequestCancelled = -32011
    HeaderMismatch = -32020
    MissingRequiredClientCapability = -32021
    UnsupportedProtocolVersion = -32022
    UrlElicitationRequired = -32042
    SerializationError = -32070
    UnknownError = -32099


RESOURCE_NOT_FOUND = -32002
"""MCP's 2025-era code for ``resources/read`` of a URI nothing serves (``data.uri``); 2026-07-28
answers ``InvalidParams`` instead. Not a :class:`JsonRpcErrorCode` member: the number is the
reference framework's ``Conflict``, and an enum alias would read back as ``Conflict``."""


class McpError(Exception):
    """An error with a JSON-RPC code, a client-visible message and optional ``data``.

    Args:
        code: a :class:`JsonRpcErrorCode` or any integer code.
        message: the client-visible message.
        data: JSON-serialisable details; ``data.reason`` names a declared error contract entry.
        cause: the underlying exception, kept as ``__cause__`` for logs (never sent).
    """

    def __init__(
        self,
        code: int,
        message: str | None = None,
        data: Mapping[str, Any] | None = None,
        *,
        cause: BaseException | None = None,
    ) -> None:
        self.code = int(code)
        self.message = message if message is not None else _default_message(self.code)
        self.data: dict[str, Any] | None = dict(data) if data is not None else None
        super().__init__(self.message)
        if cause is not None:
            self.__cause__ = cause

    def __repr__(self) -> str:
        return f"McpError(code={self.code}, message={self.message!r}, data={self.data!r})"

    def to_wire(self, request_id: str | None = None, contracts: Sequence[ErrorContract] = ()) -> dict[str, Any]:
        """The JSON-RPC ``error`` object: the declared recovery hint filled from ``contracts``
        and, when given, ``data.requestId``."""
        data = fill_recovery(self, contracts) if contracts else self.data
        if request_id is not None:
            data = {**data, "requestId": request_id} if data else {"requestId": request_id}
        return error_object(self.code, self.message, data)


class MethodError(McpError):
    """A method's own JSON-RPC error, marked as such on its way out through the middleware.

    Around ``tools/call``, an exception a middleware layer raises is the tool's ``isError``
    result, while the method's own refusals (an unknown tool, a missing scope, ``-32021``, a
    store outage) stay JSON-RPC errors. The method's errors leave it as this type (the original
    is its ``__cause__``); a layer that catches ``McpError`` still sees code, message and data.
    """

    @classmethod
    def of(cls, err: McpError) -> MethodError:
        """``err`` marked as the method's own (``err`` itself when it already is)."""
        if isinstance(err, MethodError):
            return err
        return cls(err.code, err.message, err.data, cause=err)


def error_object(code: int, message: str, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON-RPC ``error`` member, ``{"code", "message", "data"?}`` (``data`` only when there is
    any): the one builder of error objects, for every transport and method."""
    err: dict[str, Any] = {"code": int(code), "message": message}
    if data:
        err["data"] = dict(data)
    return err


class ConfigurationError(Exception):
    """A definition or setting is wrong; raised at decoration or startup, never on the wire."""


def _default_message(code: int) -> str:
    try:
        name = JsonRpcErrorCode(code).name
    except ValueError:
        return "Error"
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name)


def _factory(code: JsonRpcErrorCode, doc: str) -> Any:
    def make(
        message: str | None = None,
        data: Mapping[str, Any] | None = None,
        *,
        cause: BaseException | None = None,
    ) -> McpError:
        return McpError(code, message, data, cause=cause)

    make.__doc__ = doc
    return make


invalid_params = _factory(JsonRpcErrorCode.InvalidParams, "An ``InvalidParams`` (-32602) error.")
invalid_request = _factory(JsonRpcErrorCode.InvalidRequest, "An ``InvalidRequest`` (-32600) error.")
method_not_found = _factory(JsonRpcErrorCode.MethodNotFound, "A ``MethodNotFound`` (-32601) error.")
internal_error = _factory(JsonRpcErrorCode.InternalError, "An ``InternalError`` (-32603) error.")
not_found = _factory(JsonRpcErrorCode.NotFound, "A ``NotFound`` (-32001) error.")
forbidden = _factory(JsonRpcErrorCode.Forbidden, "A ``Forbidden`` (-32005) error.")
unauthorized = _factory(JsonRpcErrorCode.Unauthorized, "An ``Unauthorized`` (-32006) error.")
validation_error = _factory(JsonRpcErrorCode.ValidationError, "A ``ValidationError`` (-32007) error.")
conflict = _factory(JsonRpcErrorCode.Conflict, "A ``Conflict`` (-32002) error.")
rate_limited = _factory(JsonRpcErrorCode.RateLimited, "A ``RateLimited`` (-32003) error.")
timeout = _factory(JsonRpcErrorCode.Timeout, "A ``Timeout`` (-32004) error.")
service_unavailable = _factory(JsonRpcErrorCode.ServiceUnavailable, "A ``ServiceUnavailable`` (-32000) error.")
serialization_error = _factory(JsonRpcErrorCode.SerializationError, "A ``SerializationError`` (-32070) error.")


_REASON = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class ErrorContract:
    """One declared failure of a tool or resource (``errors=[...]``).

    ``reason`` is a unique snake_case identifier sent as ``data.reason``; ``code`` the JSON-RPC
    code the failure carries; ``when`` the default message; ``recovery`` the hint the framework
    puts on the wire as ``data.recovery.hint`` whenever a failure carries this reason.
    """

    reason: str
    code: int
    when: str
    recovery: str
    retryable: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "code": int(self.code), "when": self.when,
                               "recovery": self.recovery}
        if self.retryable:
            out["retryable"] = True
        return out


class Fail(Protocol):
    """``ctx.fail``: the :class:`McpError` of a declared failure, to raise."""

    def __call__(self, reason: str, message: str | None = None, data: Mapping[str, Any] | None = None, *,
                 cause: BaseException | None = None) -> McpError: ...


def contract_failure(contracts: Sequence[ErrorContract], reason: str, message: str | None = None,
                     data: Mapping[str, Any] | None = None, *, cause: BaseException | None = None) -> McpError:
    """The :class:`McpError` of the declared failure ``reason``: the contract's code, ``message``
    or its ``when``, ``data`` with ``reason`` written last (and ``retryable``). An undeclared
    reason gives an ``InternalError`` naming the declared ones."""
    for c in contracts:
        if c.reason == reason:
            payload = dict(data) if data else {}
            payload["reason"] = c.reason
            if c.retryable:
                payload.setdefault("retryable", True)
            return McpError(c.code, message or c.when, payload, cause=cause)
    return McpError(JsonRpcErrorCode.InternalError, f"Undeclared error reason {reason!r}.",
                    {"reason": reason, "declaredReasons": [c.reason for c in contracts]}, cause=cause)


def validate_contracts(owner: str, contracts: Sequence[ErrorContract]) -> tuple[ErrorContract, ...]:
    """Check an ``errors=[...]`` list at definition time; raise :class:`ConfigurationError`."""
    seen: set[str] = set()
    for c in contracts:
        if not isinstance(c, ErrorContract):
            raise ConfigurationError(f"{owner}: errors[] entries must be ErrorContract, got {type(c).__name__}")
        if not _REASON.match(c.reason):
            raise ConfigurationError(f"{owner}: error reason {c.reason!r} must be snake_case")
        if c.reason in seen:
            raise ConfigurationError(f"{owner}: error reason {c.reason!r} is declared twice")
        seen.add(c.reason)
        if not c.when.strip():
            raise ConfigurationError(f"{owner}: error {c.reason!r} needs a 'when' description")
        if not c.recovery.strip():
            raise ConfigurationError(f"{owner}: error {c.reason!r} needs a recovery hint")
    return tuple(contracts)


def with_recovery(err: McpError, contracts: Sequence[ErrorContract]) -> McpError:
    """``err`` as a JSON-RPC error should carry it: a copy with the declared recovery hint
    filled (``err`` itself is unchanged; without a matching contract it is returned as is)."""
    data = fill_recovery(err, contracts)
    return err if data is err.data else McpError(err.code, err.message, data)


def resource_not_found(uri: str, *, modern: bool) -> McpError:
    """``resources/read`` of ``uri``, which nothing serves: ``InvalidParams`` on 2026-07-28,
    :data:`RESOURCE_NOT_FOUND` on the 2025 era; ``data.uri`` on both."""
    code = JsonRpcErrorCode.InvalidParams if modern else RESOURCE_NOT_FOUND
    return McpError(code, f"Resource not found: {quoted(uri)}", {"uri": uri})


def fill_recovery(err: McpError, contracts: Sequence[ErrorContract]) -> dict[str, Any] | None:
    """``err.data`` with the declared recovery hint added when its reason is declared.

    The thrown error is never changed; a copy of its data is returned.
    """
    data = err.data
    if not data or not contracts:
        return data
    reason = data.get("reason")
    if reason is None or "recovery" in data:
        return data
    for c in contracts:
        if c.reason == reason:
            return {**data, "recovery": {"hint": c.recovery}}
    return data


_PATHS = re.compile(r"(?:[A-Za-z]:\\|/)(?:[\w.\-]+[/\\])+[\w.\-]*")


def _scrub(text: str) -> str:
    """Remove filesystem paths from a message that is about to leave the process."""
    return _PATHS.sub("<path>", text)[:500]


def classify(exc: BaseException) -> McpError:
    """Turn any exception into the :class:`McpError` a client may see.

    An :class:`McpError` passes through unchanged. Other exceptions are mapped by type to a code
    with a message that carries no internals (no paths, no stack); unknown ones become
    ``InternalError``.
    """
    if isinstance(exc, McpError):
        return exc
    name = type(exc).__name__
    if name == "ValidationError" and hasattr(exc, "errors"):
        return McpError(JsonRpcErrorCode.ValidationError, _scrub(str(exc).split("\n", 1)[0]), cause=exc)
    if isinstance(exc, TimeoutError):
        return McpError(JsonRpcErrorCode.Timeout, "The operation timed out.", cause=exc)
    if isinstance(exc, PermissionError):
        return McpError(JsonRpcErrorCode.Forbidden, "Permission denied.", cause=exc)
    if isinstance(exc, FileNotFoundError):
        return McpError(JsonRpcErrorCode.NotFound, "Not found.", cause=exc)
    if isinstance(exc, ConnectionError):
        return McpError(JsonRpcErrorCode.ServiceUnavailable, "An upstream service is unavailable.", cause=exc)
    if isinstance(exc, ValueError) and not isinstance(exc, UnicodeError):
        # Its text is the library's or the handler's own words about a value, often echoing
        # it: logged, never sent. Raise McpError (or validation_error) to tell the caller why.
        return McpError(JsonRpcErrorCode.ValidationError, "Invalid value.", cause=exc)
    if isinstance(exc, NotImplementedError):
        return McpError(JsonRpcErrorCode.InternalError, "Not implemented.", cause=exc)
    return McpError(JsonRpcErrorCode.InternalError, "Internal error.", cause=exc)
