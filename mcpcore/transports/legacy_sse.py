"""The 2024-11-05 HTTP+SSE transport, for the oldest clients (off unless ``MCP_HTTP_LEGACY_SSE``).

``GET /sse`` opens the connection's event stream; its first event (``endpoint``) names the URL
to POST messages to (``/messages?session_id=...``). Every POST is answered 202 and its reply
travels on the stream as an ``event: message``. The connection is the session: closing the
stream ends it.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from .. import _json
from ..errors import JsonRpcErrorCode
from ..protocol.jsonrpc import error_response
from ..runtime import Runtime
from .exchange import json_response
from .guard import BodyTooLarge, OriginGuard, accepts, read_body
from .sse import SseWriter, event
from .stdio import MessagePump

__all__ = ["LegacySseTransport"]

log = logging.getLogger("mcpcore.transport")

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class _QueueChannel:
    """A connection's outgoing messages, queued for its SSE stream."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._idle = asyncio.Event()
        self._idle.set()

    def put(self, data: bytes) -> None:
        self._idle.clear()
        self.queue.put_nowait(data)

    def written(self) -> None:
        if self.queue.empty():
            self._idle.set()

    async def drain(self) -> None:
        await self._idle.wait()


async def _error(send: Send, status: int, message: str) -> None:
    await json_response(send, status, error_response(None, {"code": JsonRpcErrorCode.InvalidRequest,
                                                            "message": message}))


class LegacySseTransport:
    """Serves ``GET /sse`` and ``POST /messages``."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        s = rt.settings
        self.guard = OriginGuard(s.allowed_origins, s.allowed_hosts)
        self.keepalive_s = s.sse_keepalive_ms / 1000
        self.connections: dict[str, tuple[MessagePump, _QueueChannel]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send, route: str) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        reason = self.guard.check(scope, headers.get("host"), headers.get("origin"))
        if reason is not None:
            await _error(send, 403, f"Forbidden: {reason}.")
            return
        if route == "/sse" and scope["method"] == "GET":
            await self._stream(scope, receive, send, headers)
        elif route == "/messages" and scope["method"] == "POST":
            await self._post(scope, receive, send, headers)
        else:
            await _error(send, 405, "Method not allowed.")

    async def _stream(self, scope: dict[str, Any], receive: Receive, send: Send, headers: dict[str, str]) -> None:
        if "accept" in headers and not accepts(headers["accept"], "text/event-stream"):
            await _error(send, 406, "Not Acceptable: use text/event-stream.")
            return
        cid = secrets.token_hex(16)
        channel = _QueueChannel()
        pump = MessagePump(self.rt, channel, origin=f"sse:{cid}")
        self.connections[cid] = (pump, channel)
        writer = SseWriter(send, [], self.keepalive_s)
        stop = self.rt.dispatcher.closing.add_listener(lambda: channel.queue.put_nowait(None))
        gone = asyncio.get_running_loop().create_task(_until_disconnect(receive))
        try:
            endpoint = f"{scope.get('root_path', '')}/messages?session_id={cid}"
            await writer.write(event(endpoint.encode(), name=b"endpoint"))
            while True:
                getter = asyncio.ensure_future(channel.queue.get())
                done, _ = await asyncio.wait({getter, gone}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    break
                data = getter.result()
                if data is None:
                    break
                await writer.write(event(data))
                channel.written()
        finally:
            gone.cancel()
            stop()
            self.connections.pop(cid, None)
            await pump.close("the SSE stream closed")
            await writer.close()

    async def _post(self, scope: dict[str, Any], receive: Receive, send: Send, headers: dict[str, str]) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        cid = (query.get("session_id") or [""])[0]
        conn = self.connections.get(cid)
        if conn is None:
            await _error(send, 404, "Unknown or closed session; open a new stream with GET /sse.")
            return
        ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            await _error(send, 415, "Unsupported Media Type: use application/json.")
            return
        try:
            body = await read_body(receive, self.rt.settings.max_body_bytes, headers.get("content-length"))
        except BodyTooLarge:
            await _error(send, 413, "Payload Too Large.")
            return
        if body is None:
            return
        try:
            msg = _json.loads(body)
        except _json.JSONDecodeError:
            await json_response(send, 400, error_response(None, {"code": JsonRpcErrorCode.ParseError,
                                                                 "message": "Parse error."}))
            return
        conn[0].handle(msg)
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"8")]})
        await send({"type": "http.response.body", "body": b"Accepted"})


async def _until_disconnect(receive: Receive) -> None:
    while True:
        if (await receive())["type"] == "http.disconnect":
            return
