"""Streamable HTTP at one path, serving both protocol eras (POST, GET, DELETE).

The request's way through this package runs one way: here the guard, CORS, authentication and
the body; then the era is chosen (the wire digest's Part C2: a request that carries the
2026-07-28 envelope, or names that revision in ``MCP-Protocol-Version``, and no session is
modern and served statelessly by :mod:`.modern`; everything else is 2025-era traffic, served by
:mod:`.sessions`); GET and DELETE go to :mod:`.streams`. All of them share :mod:`.wire`.
"""

from __future__ import annotations

import logging

from ... import _json
from ...asgi_types import Receive, Scope, Send
from ...auth import AuthError
from ...errors import JsonRpcErrorCode
from ...protocol.jsonrpc import InvalidMessage, classify_message, too_deep
from ...protocol.limits import SHORTEST_BOUND
from ...protocol.versions import META_PROTOCOL_VERSION
from ...runtime import Runtime
from ..authn import authenticate, refuse
from ..cors import Cors
from ..guard import BodyTooLarge, OriginGuard, accepts, read_body
from .modern import ModernPost
from .sessions import SessionPost
from .streams import Streams
from .wire import ACCEPT_BOTH, MODERN_VERSION_BYTES, HttpContext, RequestHeaders, error, replay

__all__ = ["HttpTransport"]

log = logging.getLogger("mcpcore.transport")


class HttpTransport:
    """The ASGI endpoint for ``/mcp``."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        s = rt.settings
        self.guard = OriginGuard((*s.allowed_origins, *s.cors_allowed_origins), s.allowed_hosts)
        self.cors = Cors(s.cors_allowed_origins)
        self.limit = s.max_body_bytes
        self.limit_digits = len(str(s.max_body_bytes))  # a shorter Content-Length is within the limit
        self.max_depth = s.max_json_depth
        self.depth_floor = 2 * s.max_json_depth  # a shorter body cannot nest that deep
        ctx = HttpContext(rt, rt.dispatcher, rt.session_mode, s.sse_keepalive_ms / 1000, s.stream_queue_max)
        self.modern = ModernPost(ctx)
        self.sessions = SessionPost(ctx)
        self.streams = Streams(ctx, self.sessions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = RequestHeaders(scope["headers"])
        reason = self.guard.check(scope, headers.get(b"host"), headers.get(b"origin"))
        if reason is not None:
            log.warning("refused request: %s", reason)
            await error(send, 403, JsonRpcErrorCode.InvalidRequest, f"Forbidden: {reason}.")
            return
        method = scope["method"]
        if method == "OPTIONS":
            await self.cors.preflight(headers, send)
            return
        if self.cors.origins and b"origin" in headers:
            send = self.cors.wrap(headers[b"origin"], send)
        if self.rt.auth is not None and method in ("POST", "GET", "DELETE"):
            try:
                headers.auth = await authenticate(self.rt, scope)
            except AuthError as exc:
                await refuse(self.rt, scope, send, headers.text(b"host"), exc)
                return
        if method == "POST":
            await self._post(receive, send, headers)
        elif method == "GET":
            await self.streams.get(receive, send, headers)
        elif method == "DELETE":
            await self.streams.delete(send, headers)
        else:
            await error(send, 405, JsonRpcErrorCode.InvalidRequest, "Method not allowed.",
                        headers=[(b"allow", b"GET, POST, DELETE")])

    async def _post(self, receive: Receive, send: Send, headers: RequestHeaders) -> None:
        ctype = headers.get(b"content-type", b"")
        if ctype != b"application/json" and ctype.split(b";", 1)[0].strip().lower() != b"application/json":
            await error(send, 415, JsonRpcErrorCode.InvalidRequest, "Unsupported Media Type: use application/json.")
            return
        accept = headers.get(b"accept")
        if accept not in ACCEPT_BOTH and not accepts(accept, "application/json", "text/event-stream"):
            await error(send, 406, JsonRpcErrorCode.InvalidRequest,
                        "Not Acceptable: Accept must list application/json and text/event-stream.")
            return
        length = headers.get(b"content-length")
        if self.limit and length is not None and len(length) >= self.limit_digits and length.isdigit() and \
                int(length) > self.limit:
            await error(send, 413, JsonRpcErrorCode.InvalidRequest,
                        f"Payload Too Large: the limit is {self.limit} bytes.")
            return
        try:
            message = await receive()
            if message["type"] != "http.request" or message.get("more_body"):  # streamed in parts
                body = await read_body(replay(message, receive), self.limit, None)
                if body is None:
                    return
            else:
                body = message.get("body", b"")
                if self.limit and len(body) > self.limit:
                    raise BodyTooLarge
        except BodyTooLarge:
            await error(send, 413, JsonRpcErrorCode.InvalidRequest,
                        f"Payload Too Large: the limit is {self.limit} bytes.")
            return
        if len(body) > SHORTEST_BOUND:
            headers.long_body = True
        try:
            msg = _json.loads(body)
        except _json.JSONDecodeError:
            await error(send, 400, JsonRpcErrorCode.ParseError, "Parse error: the body is not valid JSON.")
            return
        if len(body) > self.depth_floor and len(body) - len(body.translate(None, b"{[")) > self.max_depth and \
                too_deep(msg, self.max_depth):
            await error(send, 400, JsonRpcErrorCode.InvalidRequest,
                        f"Bad Request: JSON nested deeper than {self.max_depth} levels.")
            return
        if type(msg) is list:
            await self.sessions.batch(send, headers, msg)
            return
        try:
            kind = classify_message(msg)
        except InvalidMessage as exc:
            await error(send, 400, exc.code, exc.message, exc.request_id)
            return
        if kind == "request" and b"mcp-session-id" not in headers:
            params = msg.get("params")
            meta = params.get("_meta") if type(params) is dict else None
            if (type(meta) is dict and META_PROTOCOL_VERSION in meta) or \
                    headers.get(b"mcp-protocol-version", b"").strip() in MODERN_VERSION_BYTES:
                await self.modern(receive, send, headers, msg)
                return
        sid = headers.get(b"mcp-session-id")
        await self.sessions(receive, send, headers, msg, kind, sid.decode("latin-1") if sid is not None else None)
