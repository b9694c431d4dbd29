"""The 2024-11-05 HTTP+SSE transport, for the oldest clients (off unless ``MCP_HTTP_LEGACY_SSE``).

``GET /sse`` opens the connection's event stream; its first event (``endpoint``) names the URL
to POST messages to (``/messages?session_id=...``). Every POST is answered 202 and its reply
travels on the stream as an ``event: message``. The connection is the session: closing the
stream ends it. At most ``MCP_HTTP_STREAM_QUEUE_MAX`` messages wait for a client that does not
read (one more drops the stream, and so the session), and at most
``MCP_HTTP_LEGACY_SSE_MAX_IN_FLIGHT`` requests run per connection (one more is answered 503).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from .. import _json
from ..asgi_types import Receive, Scope, Send
from ..context import AuthInfo
from ..errors import JsonRpcErrorCode, McpError, error_object
from ..protocol.jsonrpc import error_response, too_deep
from ..queues import BoundedQueue
from ..runtime import Runtime
from ..sessions.streams import caller_of
from .authn import Identity, identity_of, tenant_of
from .exchange import json_response
from .guard import BodyTooLarge, accepts, read_body
from .http.door import ANSWERED
from .inflight import next_unless_gone
from .sse import SseWriter, event
from .stdio import MessagePump

if TYPE_CHECKING:
    from ..stack import Stack

__all__ = ["HttpSseTransport"]

log = logging.getLogger("mcpcore.transport")



class _QueueChannel:
    """A connection's outgoing messages, queued for its SSE stream: at most ``limit`` wait
    (``MCP_HTTP_STREAM_QUEUE_MAX``); one more and the stream is dropped (``on_overflow``)."""

    def __init__(self, limit: int, on_overflow: Callable[[], None]) -> None:
        self.queue: BoundedQueue[bytes] = BoundedQueue(limit)
        self._on_overflow = on_overflow
        self._idle = asyncio.Event()
        self._idle.set()

    def put(self, data: bytes) -> None:
        queue = self.queue
        if queue.overflowed:
            return
        self._idle.clear()
        queue.put_nowait(data)
        if queue.overflowed:  # the client stopped reading: what waited is dropped, and so is the stream
            self._idle.set()
            self._on_overflow()

    def written(self) -> None:
        if not len(self.queue):
            self._idle.set()

    async def drain(self) -> None:
        await self._idle.wait()


async def _error(send: Send, status: int, message: str) -> None:
    await json_response(send, status, error_response(None, error_object(JsonRpcErrorCode.InvalidRequest, message)))


class _Connection:
    """One ``/sse`` stream: its message pump, its outgoing queue, and who opened it."""

    __slots__ = ("channel", "identity", "pump")

    def __init__(self, pump: MessagePump, channel: _QueueChannel, identity: Identity | None) -> None:
        self.pump = pump
        self.channel = channel
        self.identity = identity


class HttpSseTransport:
    """Serves ``GET /sse`` and ``POST /messages``.

    Both routes pass the same door as ``/mcp``: Host/Origin guard, authentication (a stream is
    bound to the identity that opened it, and every POST must prove the same identity), the body
    and depth limits, and the session caps (``MCP_MAX_SESSIONS``, ``MCP_MAX_SESSIONS_PER_IDENTITY``
    count open streams here).
    """

    def __init__(self, rt: Runtime, stack: Stack) -> None:
        self.rt = rt
        s = rt.settings
        self.guard = stack.guard
        self.auth = stack.auth
        self.keepalive_s = s.sse_keepalive_ms / 1000
        self.connections: dict[str, _Connection] = {}
        self._per_identity: dict[Identity, int] = {}
        self._closing: set[asyncio.Task[None]] = set()  # pumps of dropped streams, closing

    async def __call__(self, scope: Scope, receive: Receive, send: Send, route: str) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        reason = self.guard.reason(scope, headers.get("host"), headers.get("origin"))
        if reason is not None:
            await _error(send, 403, f"Forbidden: {reason}.")
            return
        if not ((route == "/sse" and scope["method"] == "GET") or (route == "/messages" and scope["method"] == "POST")):
            await _error(send, 405, "Method not allowed.")
            return
        auth = await self.auth.verify(scope, send, headers.get("host")) if self.auth is not None else None
        if auth is ANSWERED:
            return
        if route == "/sse":
            await self._stream(scope, receive, send, headers, auth)
        else:
            await self._post(scope, receive, send, headers, auth)

    def _room_for(self, identity: Identity | None) -> str | None:
        s = self.rt.settings
        if len(self.connections) >= s.max_sessions:
            return f"Too many open sessions ({s.max_sessions}); try again later."
        if identity is not None and self._per_identity.get(identity, 0) >= s.max_sessions_per_identity:
            return f"Too many open sessions for this identity ({s.max_sessions_per_identity})."
        return None

    async def _stream(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str],
                      auth: AuthInfo | None) -> None:
        if "accept" in headers and not accepts(headers["accept"], "text/event-stream"):
            await _error(send, 406, "Not Acceptable: use text/event-stream.")
            return
        identity = identity_of(auth)
        full = self._room_for(identity)
        if full is not None:
            body = error_response(None, error_object(JsonRpcErrorCode.ServiceUnavailable, full))
            await json_response(send, 503, body, [(b"retry-after", b"5")])
            return
        callers = self.rt.dispatcher.core.streams
        caller = caller_of(auth, scope)
        try:
            callers.take(caller)
        except McpError as exc:
            await json_response(send, 503, error_response(None, exc.to_wire()))
            return
        try:
            await self._serve_stream(scope, receive, send, auth, identity)
        finally:
            callers.give(caller)

    async def _serve_stream(self, scope: Scope, receive: Receive, send: Send, auth: AuthInfo | None,
                            identity: Identity | None) -> None:
        cid = secrets.token_hex(16)
        channel = _QueueChannel(self.rt.settings.stream_queue_max, lambda: self._drop(cid))
        pump = MessagePump(self.rt, channel, origin=f"sse:{cid}", auth=auth, tenant_id=tenant_of(self.rt, auth),
                           asgi_scope=scope)
        self.connections[cid] = _Connection(pump, channel, identity)
        if identity is not None:
            self._per_identity[identity] = self._per_identity.get(identity, 0) + 1
        writer = SseWriter(send, [], self.keepalive_s)
        stop = self.rt.dispatcher.closing.add_listener(lambda: channel.queue.put_nowait(None))
        gone = asyncio.get_running_loop().create_task(_until_disconnect(receive))
        try:
            endpoint = f"{scope.get('root_path', '')}/messages?session_id={cid}"
            await writer.write(event(endpoint.encode(), name=b"endpoint"))
            while True:
                data = await next_unless_gone(channel.queue.get, gone)
                if data is None:
                    break
                await writer.write(event(data))
                channel.written()
        finally:
            gone.cancel()
            stop()
            self.connections.pop(cid, None)
            if identity is not None:
                left = self._per_identity.get(identity, 1) - 1
                if left > 0:
                    self._per_identity[identity] = left
                else:
                    self._per_identity.pop(identity, None)
            await pump.close("the SSE stream closed")
            await writer.close()

    def _drop(self, cid: str) -> None:
        """The client of stream ``cid`` stopped reading: its session ends now (its messages URL is
        unknown from here on, what runs is cancelled); the stream ends once its write returns."""
        conn = self.connections.pop(cid, None)
        if conn is None:
            return
        log.warning("dropped an HTTP+SSE stream whose client stopped reading (%d messages waiting)",
                    self.rt.settings.stream_queue_max)
        task = asyncio.get_running_loop().create_task(conn.pump.close("the client stopped reading its stream"))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _post(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str],
                    auth: AuthInfo | None) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        cid = (query.get("session_id") or [""])[0]
        conn = self.connections.get(cid)
        if conn is None or conn.identity != identity_of(auth):
            if conn is not None:
                log.warning("refused a /messages POST from another identity than the stream's")
            await _error(send, 404, "Unknown or closed session; open a new stream with GET /sse.")
            return
        ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            await _error(send, 415, "Unsupported Media Type: use application/json.")
            return
        limits = self.rt.settings
        try:
            body = await read_body(receive, limits.max_body_bytes, headers.get("content-length"))
        except BodyTooLarge:
            await _error(send, 413, "Payload Too Large.")
            return
        if body is None:
            return
        try:
            msg = _json.loads(body)
        except _json.JSONDecodeError:
            await json_response(send, 400,
                                error_response(None, error_object(JsonRpcErrorCode.ParseError, "Parse error.")))
            return
        if too_deep(msg, limits.max_json_depth, body):
            await _error(send, 400, f"Bad Request: JSON nested deeper than {limits.max_json_depth} levels.")
            return
        requests = _requests_in(msg)
        if requests and conn.pump.in_flight + requests > limits.http_sse_max_in_flight:
            cap = limits.http_sse_max_in_flight
            refusal = error_object(JsonRpcErrorCode.ServiceUnavailable, f"This connection has {cap} requests in "
                                   "flight (MCP_HTTP_LEGACY_SSE_MAX_IN_FLIGHT); send more once some are answered.",
                                   {"reason": "too_many_requests_in_flight"})
            await json_response(send, 503, error_response(msg.get("id") if type(msg) is dict else None, refusal))
            return
        conn.pump.handle(msg)
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"8")]})
        await send({"type": "http.response.body", "body": b"Accepted"})


def _requests_in(msg: Any) -> int:
    """How many requests a message (or batch) holds: answers and notifications run nothing the
    client waits for (and requests in flight may be waiting on an answer: it is never refused)."""
    msgs = msg if type(msg) is list else (msg,)
    return sum(1 for m in msgs if type(m) is dict and "method" in m and "id" in m)


async def _until_disconnect(receive: Receive) -> None:
    while True:
        if (await receive())["type"] == "http.disconnect":
            return
