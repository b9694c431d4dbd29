"""A 2026-07-28 POST: the per-request envelope, its header mirror, no session.

Closing the response stream cancels the request (watched only once the handler waits)."""

from __future__ import annotations

from typing import Any

from ...asgi_types import Receive, Send
from ...context import Inbound
from ...errors import JsonRpcErrorCode, McpError, quoted
from ...protocol.envelope import MIRRORED, VERBATIM_NAMES, VERSION_BYTES, check_headers
from ...protocol.jsonrpc import error_response
from ...protocol.versions import ERA_MODERN, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from ..authn import tenant_of
from ..exchange import HttpExchange, json_response
from ..inflight import watched_rest
from ..intake import Refused, modern_inbound
from .wire import HttpContext, RequestHeaders, error_object, http_status, trace

__all__ = ["ModernPost"]

_NONE = object()  # what no header value equals


class ModernPost:
    """Serves one 2026-07-28 request."""

    def __init__(self, ctx: HttpContext) -> None:
        self.ctx = ctx
        self.dispatcher = ctx.dispatcher
        self.anonymous_tenant = tenant_of(ctx.rt, None)

    async def serve(self, receive: Receive, send: Send, headers: RequestHeaders, msg: dict[str, Any],
                    common: bool = False) -> None:
        """Answer the request ``msg`` (a method, not ``__call__``: an instance call costs a lookup more).

        ``common``: the session-or-envelope layer found it a valid request whose envelope is
        exactly a 2026-07-28 version and the client's capabilities (nothing optional, no round
        fields): its Inbound is the one :func:`modern_inbound` would build, built here directly."""
        ctx = self.ctx
        rid = msg["id"]
        method = msg["method"]
        params = msg.get("params") or {}
        auth = headers.auth
        tenant = auth.tenant_id if auth is not None else self.anonymous_tenant
        req: Inbound | Refused
        if common:
            meta = params["_meta"]
            req = Inbound.received(method, rid, ERA_MODERN, ctx.rt.services, auth, tenant, meta[META_PROTOCOL_VERSION],
                                   meta[META_CLIENT_CAPABILITIES], None, None, meta)
        else:
            req = modern_inbound(msg, ctx.rt.services, auth, tenant)
        if type(req) is Refused:
            exc = req.error
            if exc.code == JsonRpcErrorCode.UnsupportedProtocolVersion:
                try:  # a header that contradicts the body is the more precise answer
                    check_headers(headers, msg, exc.data["requested"] if exc.data else "", None)
                except McpError as mismatch:
                    exc = mismatch
            await json_response(send, 400, error_response(rid, exc.to_wire(req.request_id)))
            return
        assert isinstance(req, Inbound)
        req.asgi_scope = headers.scope
        if headers.long_body:
            req.check_sizes = True
        if b"traceparent" in headers:
            req.trace_headers = trace(headers)
        hp = None
        if method == "tools/call" and type(params.get("name")) is str:
            tool = self.dispatcher.registry.tools.get(params["name"])
            hp = tool.header_params if tool is not None else None
        # A common request whose MCP headers are the body's verbatim (no Mcp-Param-*) passes
        # check_headers as it would: the same comparisons, without its call.
        mirrored = MIRRORED[method] if common else None
        if mirrored is None or hp or headers.get(b"mcp-protocol-version") != VERSION_BYTES[req.protocol_version] or \
                headers.get(b"mcp-method") != mirrored[0] or (mirrored[1] is not None and (
                    type(name := params.get(mirrored[1])) is not str or
                    headers.get(b"mcp-name") != VERBATIM_NAMES.get(name, _NONE))):
            try:
                check_headers(headers, msg, req.protocol_version, hp)
            except McpError as exc:
                await json_response(send, 400, error_response(rid, exc.to_wire(req.request_id)))
                return
        if not self.dispatcher.supports(method, ERA_MODERN):
            await json_response(send, 404, error_response(rid, error_object(
                JsonRpcErrorCode.MethodNotFound, f"Method not found: {quoted(method)}", {"requestId": req.request_id})))
            return
        exchange = HttpExchange(send, ctx.keepalive_s, None, None, ctx.queue_max)
        req.outbound = exchange
        coro = self.dispatcher.handle(msg, req, supported=True)
        try:  # the first step here: a handler that never waits costs no watcher and no extra coroutine
            step = coro.send(None)
        except StopIteration as done:
            body: bytes = done.value
        else:
            finished = await watched_rest(coro, step, req, receive)
            if finished is None:
                exchange.abandon()
                return
            body = finished
        if type(body) is bytes:
            if exchange.writer is not None or exchange.pumping is not None:  # exchange.plain_answer, inlined
                await exchange.finish(body)
                return
            exchange.finished = True
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
            await send({"type": "http.response.body", "body": body})
            return
        status, extra = http_status(body, ERA_MODERN)
        await exchange.finish(body, status, extra)
