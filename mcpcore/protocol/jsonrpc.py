"""JSON-RPC 2.0 envelopes, checked with plain dict operations (no model per message)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from orjson import dumps as _orjson_dumps

from .. import _json
from ..errors import JsonRpcErrorCode, McpError, error_object
from .limits import MAX_ID, MAX_METHOD

__all__ = [
    "InvalidMessage",
    "MessageKind",
    "bounded_batch",
    "classify_message",
    "error_response",
    "request_message",
    "result_response",
    "too_deep",
    "valid_id",
]

MessageKind = Literal["request", "notification", "response"]


class InvalidMessage(McpError):
    """A message that is not valid JSON-RPC; ``request_id`` is set when its id could be read."""

    def __init__(self, code: int, message: str, request_id: str | int | None = None) -> None:
        super().__init__(code, message)
        self.request_id = request_id


def valid_id(value: object) -> bool:
    """MCP ids are strings (of at most ``MAX_ID`` characters here) or integers; never bool,
    null or float."""
    t = type(value)
    return t is int or (t is str and len(value) <= MAX_ID)  # type: ignore[arg-type]


def classify_message(msg: object) -> MessageKind:
    """Name the kind of one JSON-RPC message or raise :class:`InvalidMessage`."""
    if type(msg) is not dict:
        raise InvalidMessage(JsonRpcErrorCode.InvalidRequest, "A JSON-RPC message must be an object.")
    if msg.get("jsonrpc") != "2.0":
        rid = msg.get("id")
        raise InvalidMessage(JsonRpcErrorCode.InvalidRequest, 'The "jsonrpc" member must be "2.0".',
                             rid if valid_id(rid) else None)
    method = msg.get("method")
    if method is not None:
        if type(method) is not str or not method or len(method) > MAX_METHOD:
            rid = msg.get("id")
            raise InvalidMessage(JsonRpcErrorCode.InvalidRequest,
                                 f'The "method" member must be a string of 1 to {MAX_METHOD} characters.',
                                 rid if valid_id(rid) else None)
        params = msg.get("params")
        if "id" not in msg:
            if params is not None and type(params) is not dict:
                raise InvalidMessage(JsonRpcErrorCode.InvalidParams, '"params" must be an object.')
            return "notification"
        rid = msg["id"]
        t = type(rid)
        if t is not str and t is not int:  # valid_id, inlined: every request passes here
            raise InvalidMessage(JsonRpcErrorCode.InvalidRequest, 'The "id" member must be a string or an integer.')
        if t is str and len(rid) > MAX_ID:
            raise InvalidMessage(JsonRpcErrorCode.InvalidRequest, f'A string "id" has at most {MAX_ID} characters.')
        if params is not None and type(params) is not dict:
            raise InvalidMessage(JsonRpcErrorCode.InvalidParams, '"params" must be an object.', rid)
        return "request"
    if "id" in msg and ("result" in msg or "error" in msg):
        if not valid_id(msg["id"]):
            raise InvalidMessage(JsonRpcErrorCode.InvalidRequest, 'The "id" member must be a string or an integer.')
        if "result" in msg and "error" in msg:
            raise InvalidMessage(JsonRpcErrorCode.InvalidRequest, 'A response carries "result" or "error", not both.')
        if type(msg["id"]) is str and len(msg["id"]) > MAX_ID:
            raise InvalidMessage(JsonRpcErrorCode.InvalidRequest, f'A string "id" has at most {MAX_ID} characters.')
        return "response"
    rid = msg.get("id")
    raise InvalidMessage(JsonRpcErrorCode.InvalidRequest, "Not a JSON-RPC request, notification or response.",
                         rid if valid_id(rid) else None)


def too_deep(value: Any, limit: int, raw: bytes | None = None) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (checked without recursion).

    ``raw``, the JSON text, lets the common case skip the walk: with no more than ``limit``
    opening brackets in it, nothing can nest deeper."""
    if raw is not None and len(raw) - len(raw.translate(None, b"{[")) <= limit:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        t = type(node)
        if t is dict:
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in node.values() if type(v) in (dict, list))
        elif t is list:
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in node if type(v) in (dict, list))
    return False


def result_response(request_id: str | int, result: Any) -> bytes:
    """Serialise a result response; ``result`` may be pre-serialised bytes.

    A result object is encoded with its envelope in one call (the same bytes); what that call
    cannot encode (non-string keys, an integer id past 64 bits) takes the general way."""
    if type(result) is not bytes:
        try:
            return _orjson_dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, default=_json.to_json)
        except _json.JSONEncodeError:
            pass
    body = result if type(result) is bytes else _json.dumps(result)
    rid = str(request_id).encode() if type(request_id) is int else _json.dumps(request_id)
    return b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (rid, body)


def error_response(request_id: str | int | None, error: dict[str, Any]) -> bytes:
    """Serialise an error response (``error`` as :func:`~mcpcore.errors.error_object` builds it);
    the id is omitted when it could not be read."""
    if request_id is None:
        return b'{"jsonrpc":"2.0","error":' + _json.dumps(error) + b"}"
    return b'{"jsonrpc":"2.0","id":' + _json.dumps(request_id) + b',"error":' + _json.dumps(error) + b"}"


def bounded_batch(errors: list[bytes], answered: list[tuple[dict[str, Any], bytes | None]],
                  limit: int) -> list[bytes]:
    """The parts of a batch's response, at most ``limit`` bytes in all: answers past the limit
    are replaced by a short error naming it, so one small request cannot make the server build
    and send an unbounded response."""
    parts = list(errors)
    size = sum(len(p) for p in parts)
    for msg, body in answered:
        if body is None:
            continue
        if size + len(body) > limit:
            body = error_response(msg["id"], error_object(JsonRpcErrorCode.InvalidRequest, (
                f"The batch's response would exceed {limit} bytes; send this request on its own.")))
        size += len(body)
        parts.append(body)
    return parts


def request_message(request_id: str, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """A server-to-client request (``params`` left out when ``None``)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def settle(fut: asyncio.Future[dict[str, Any]], msg: dict[str, Any]) -> None:
    """Resolve a server-to-client request with the client's JSON-RPC answer ``msg``: its
    ``result`` (an object, else ``{}``), or its ``error`` raised as :class:`McpError`."""
    if type(msg.get("error")) is dict:
        e = msg["error"]
        fut.set_exception(McpError(e.get("code", JsonRpcErrorCode.InternalError), str(e.get("message", "")),
                                   e.get("data") if type(e.get("data")) is dict else None))
    else:
        result = msg.get("result")
        fut.set_result(result if type(result) is dict else {})
