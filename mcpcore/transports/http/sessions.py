"""A 2025-era POST: through the session its ``Mcp-Session-Id`` names (or sessionless under
``MCP_SESSION_MODE=stateless``/``auto``), with batches on 2025-03-26.

This part is also the exchange's :class:`~mcpcore.transports.exchange.SessionLink`: where a
session's POST streams are buffered, and how a handler's request reaches the client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Literal

from ...asgi_types import Receive, Send
from ...context import Inbound
from ...errors import JsonRpcErrorCode, McpError, quoted
from ...protocol.jsonrpc import InvalidMessage, bounded_batch, classify_message, error_response
from ...protocol.versions import SUPPORTED_VERSIONS, is_handshake, supports_batches
from ...sessions.base import SessionRecord, is_session_id, new_session_id
from ..authn import identity_of, tenant_of
from ..exchange import HttpExchange, StreamSink, json_response
from ..inflight import ask_client, deliver, tracked_rest
from ..intake import notification_inbound, session_inbound
from ..live import LiveSessions
from .modern import ModernPost
from .wire import (
    ANSWERED,
    LEGACY_VERSION_BYTES,
    MODERN_VERSION_BYTES,
    Answered,
    HttpContext,
    RequestHeaders,
    accepted,
    error,
    error_object,
    http_status,
    trace,
)

__all__ = ["SessionPost", "deliver_route"]

log = logging.getLogger("mcpcore.transport")


def deliver_route(live: LiveSessions, event: dict[str, Any]) -> bool:
    """Apply a client's answer or cancellation, ``{"session": id, "message": msg}``, to a
    handler waiting in this process; whether it was found here (when not, a shared deployment
    publishes it for the other instances)."""
    return deliver(live.peek(event.get("session", "")), event.get("message"))


class SessionPost:
    """Serves 2025-era POSTs: ``initialize``, requests, notifications, answers, batches."""

    def __init__(self, ctx: HttpContext, modern: ModernPost) -> None:
        self.ctx = ctx
        self.modern = modern
        self.rt = ctx.rt
        self.dispatcher = ctx.dispatcher
        self.mode = ctx.mode
        self.anonymous_tenant = tenant_of(ctx.rt, None)

    # -- the session ----------------------------------------------------------------------------

    async def lookup(self, send: Send, sid: str | None, rid: Any,
                     headers: RequestHeaders) -> SessionRecord | Literal[Answered.SENT] | None:
        """The session a 2025-era request names, checked against the caller's identity (bound on
        its first authenticated use); ``None`` when sessionless; :data:`ANSWERED` when an
        answer was already sent."""
        if sid is None or self.mode == "stateless":
            if sid is None and self.mode == "stateful":
                await error(send, 400, JsonRpcErrorCode.InvalidRequest,
                            "Bad Request: Mcp-Session-Id header is required (initialize first).", rid)
                return ANSWERED
            return None
        try:
            record = await self.rt.sessions.get(sid) if is_session_id(sid) else None
        except McpError as exc:
            await json_response(send, 503, error_response(rid, exc.to_wire()))
            return ANSWERED
        auth = headers.auth
        if record is not None and (auth is not None or record.identity is not None) and \
                (auth is not record.matched or auth is None):  # not the caller already matched
            identity = identity_of(auth)
            if identity is not None and identity == record.identity:
                record.matched = auth
            elif record.identity is None and identity is not None:
                record.identity = identity
                record.matched = auth
                await self.rt.sessions.save(record)
            else:
                log.warning("refused a session used by another identity", extra={"fields": {"sessionId": sid[:8]}})
                record = None
        if record is None:
            await error(send, 404, JsonRpcErrorCode.InvalidRequest,
                        "Session not found or expired; initialize a new session.", rid)
            return ANSWERED
        return record

    def inbound(self, msg: dict[str, Any], headers: RequestHeaders, record: SessionRecord | None) -> Inbound:
        """The request's Inbound (the intake's, with this request's trace context)."""
        auth = headers.auth
        tenant = auth.tenant_id if auth is not None else self.anonymous_tenant
        if record is not None:
            req = session_inbound(msg, self.rt.services, auth, tenant, record)
        else:
            req = session_inbound(msg, self.rt.services, auth, tenant, None,
                                  version=(headers.text(b"mcp-protocol-version") or "").strip() or None,
                                  session_id=self._stateless_id())
        req.asgi_scope = headers.scope
        if headers.long_body:
            req.check_sizes = True
        if b"traceparent" in headers:
            req.trace_headers = trace(headers)
        return req

    def _stateless_id(self) -> str | None:
        """Under ``stateless``, a fresh token per request when the app opts in to exposing it
        (``expose_stateless_session_id``); otherwise no session id, so code that treats
        ``ctx.session_id`` as durable fails closed."""
        return new_session_id() if self.mode == "stateless" and self.rt.expose_stateless_session_id else None

    # -- one message ----------------------------------------------------------------------------

    async def serve(self, receive: Receive, send: Send, headers: RequestHeaders, msg: dict[str, Any], kind: str,
                    sid: str | None) -> None:
        """Serve one 2025-era message of ``kind`` on the session ``sid`` names."""
        rid = msg.get("id") if kind == "request" else None
        raw_pv = headers.get(b"mcp-protocol-version")
        if raw_pv is not None and raw_pv not in LEGACY_VERSION_BYTES:
            if kind == "request" and raw_pv.strip() in MODERN_VERSION_BYTES and not is_handshake(msg):
                # 2026-07-28 named by the header without its _meta envelope (which the era layer
                # checked): the envelope's to answer (-32602), whatever Mcp-Session-Id says
                await self.modern.serve(receive, send, headers, msg)
                return
            if not headers.version_ok():
                await error(send, 400, JsonRpcErrorCode.InvalidRequest,
                            f"Bad Request: unsupported MCP-Protocol-Version {quoted(raw_pv.decode('latin-1'))!r}.",
                            rid, data={"supported": list(SUPPORTED_VERSIONS)})
                return
        if kind == "request" and msg["method"] == "initialize":
            await self._initialize(send, headers, msg, sid)
            return
        record = await self.lookup(send, sid, rid, headers)
        if record is ANSWERED:
            return
        if kind == "notification":
            await self._notified(msg, headers, record)
            await accepted(send)
        elif kind == "response":
            self._client_response(msg, record)
            await accepted(send)
        else:  # a request, served in this coroutine (the common 2025 request's one frame)
            req = self.inbound(msg, headers, record)
            # The answer does not repeat Mcp-Session-Id: the client knows it (it sent it), and the
            # protocol asks for it only on the response to initialize.
            exchange = HttpExchange(send, self.ctx.keepalive_s, record, self, self.ctx.queue_max)
            req.outbound = exchange
            coro = self.dispatcher.handle(msg, req)
            try:  # the first step here: a handler that never waits is never registered
                step = coro.send(None)
            except StopIteration as done:
                body: bytes = done.value
                waited = False
            else:
                body = await self._rest(coro, step, msg, req, record)
                waited = True
            if type(body) is bytes:
                start = exchange.plain_answer(body)
                if start is None:
                    await exchange.finish(body)
                else:
                    await send(start)
                    await send({"type": "http.response.body", "body": body})
            else:
                status, extra = http_status(body, req.era)
                await exchange.finish(body, status, extra)
            if waited and record is not None:  # what it registered on the session while it waited
                self.rt.live.forget_if_idle(record.id)

    async def _initialize(self, send: Send, headers: RequestHeaders, msg: dict[str, Any], sid: str | None) -> None:
        rid = msg["id"]
        if sid is not None and self.mode != "stateless":
            await error(send, 400, JsonRpcErrorCode.InvalidRequest,
                        "Bad Request: initialize starts a session and must not carry Mcp-Session-Id.", rid)
            return
        record = SessionRecord(id=new_session_id(), identity=identity_of(headers.auth)) \
            if self.mode != "stateless" else None
        req = session_inbound(msg, self.rt.services, headers.auth, tenant_of(self.rt, headers.auth), None)
        req.session = record
        req.asgi_scope = headers.scope
        body = await self.dispatcher.handle(msg, req)
        extra: list[tuple[bytes, bytes]] = []
        if record is not None and type(body) is bytes:  # initialized: no ErrorAnswer
            try:
                await self.rt.sessions.create(record)
            except McpError as exc:  # SessionCapacityError, or the store is unreachable
                await json_response(send, 503, error_response(rid, exc.to_wire(req.request_id)))
                return
            extra.append((b"mcp-session-id", record.id.encode()))
        await json_response(send, 200, body, extra)

    async def _answer(self, msg: dict[str, Any], req: Inbound, record: SessionRecord | None) -> bytes:
        """The dispatcher's answer, cancellable by ``notifications/cancelled`` on the session."""
        coro = self.dispatcher.handle(msg, req)
        try:
            step = coro.send(None)
        except StopIteration as done:
            result: bytes = done.value
            return result
        return await self._rest(coro, step, msg, req, record)

    async def _rest(self, coro: Coroutine[Any, Any, bytes], step: Any, msg: dict[str, Any], req: Inbound,
                    record: SessionRecord | None) -> bytes:
        """A handler that waited after its first step: run the rest, cancellable on the session."""
        body = await tracked_rest(coro, step, req, self.rt.live, record.id if record is not None else None)
        if body is None:
            return error_response(msg["id"], error_object(JsonRpcErrorCode.RequestCancelled, "Request cancelled.",
                                                          {"requestId": req.request_id}))
        return body

    async def _notified(self, msg: dict[str, Any], headers: RequestHeaders, record: SessionRecord | None) -> None:
        """A client notification, through the middleware's hooks when a layer has one."""
        if not self.dispatcher.hooks_notifications:
            self._notification(msg, record)
            return
        auth = headers.auth
        req = notification_inbound(msg, self.rt.services, auth, auth.tenant_id if auth is not None else
                                   self.anonymous_tenant, record)
        req.asgi_scope = headers.scope
        await self.dispatcher.notification(msg, req, lambda: self._notification(msg, record))

    def _notification(self, msg: dict[str, Any], record: SessionRecord | None) -> None:
        if msg["method"] == "notifications/cancelled" and record is not None and not deliver_route(
                self.rt.live, {"session": record.id, "message": msg}) and self.rt.shared:
            self._route(record.id, msg)

    def _client_response(self, msg: dict[str, Any], record: SessionRecord | None) -> None:
        if record is None:
            return
        if not deliver_route(self.rt.live, {"session": record.id, "message": msg}) and self.rt.shared:
            self._route(record.id, msg)

    def _route(self, session_id: str, msg: dict[str, Any]) -> None:
        """Hand a client's answer or cancellation to the instance whose handler waits for it."""
        self.dispatcher.notifier.publish({"kind": "route", "session": session_id, "message": msg})

    # -- SessionLink ----------------------------------------------------------------------------

    def sink_for(self, record: SessionRecord, stream_id: str | None = None) -> StreamSink | None:
        """Where a stream of ``record`` is buffered for resumption (the event buffer layer's)."""
        return self.ctx.buffering.sink_for(record, stream_id)

    async def ask_client(self, session_id: str, exchange: HttpExchange, method: str,
                         params: dict[str, Any] | None) -> dict[str, Any]:
        """Send a request to the client on ``exchange`` and wait for its answer (which may be
        posted to any instance: it is routed back here)."""
        return await ask_client(self.rt.live.get(session_id), exchange.post, exchange.drain, method, params,
                                self.rt.settings.client_request_timeout_ms / 1000)

    # -- batches (2025-03-26) -------------------------------------------------------------------

    async def batch(self, send: Send, headers: RequestHeaders, msgs: list[Any]) -> None:
        sid = headers.text(b"mcp-session-id")
        if not msgs:
            await error(send, 400, JsonRpcErrorCode.InvalidRequest, "An empty batch is not a valid request.")
            return
        record = await self.lookup(send, sid, None, headers)
        if record is ANSWERED:
            return
        version = record.protocol_version if record is not None else (
            headers.text(b"mcp-protocol-version") or "2025-03-26").strip()
        if not supports_batches(version):
            await error(send, 400, JsonRpcErrorCode.InvalidRequest,
                        f"Bad Request: JSON-RPC batches are not part of protocol {quoted(version)}.")
            return
        cap = self.rt.settings.max_batch_messages
        if len(msgs) > cap:
            await error(send, 400, JsonRpcErrorCode.InvalidRequest,
                        f"Bad Request: a batch holds at most {cap} messages; this one has {len(msgs)}.")
            return
        requests: list[dict[str, Any]] = []
        errors: list[bytes] = []
        ids: set[str | int] = set()
        for m in msgs:
            try:
                kind = classify_message(m)
            except InvalidMessage as exc:
                errors.append(error_response(exc.request_id, error_object(exc.code, exc.message)))
                continue
            if kind == "request" and m["id"] in ids:
                errors.append(error_response(m["id"], error_object(JsonRpcErrorCode.InvalidRequest,
                                                                   "Duplicate request id in the batch.")))
            elif kind == "request" and m["method"] == "initialize":
                errors.append(error_response(m["id"], error_object(JsonRpcErrorCode.InvalidRequest,
                                                                   "initialize must not be part of a batch.")))
            elif kind == "request":
                ids.add(m["id"])
                requests.append(m)
            elif kind == "notification":
                await self._notified(m, headers, record)
            else:
                self._client_response(m, record)
        if not requests and not errors:
            await accepted(send)
            return
        exchange = HttpExchange(send, self.ctx.keepalive_s, record, self, self.ctx.queue_max)

        async def one(m: dict[str, Any]) -> bytes:
            req = self.inbound(m, headers, record)
            req.outbound = exchange
            return await self._answer(m, req, record)

        results: list[bytes | None] = list(await asyncio.gather(*(one(m) for m in requests)))
        parts = bounded_batch(errors, list(zip(requests, results, strict=True)),
                              self.rt.settings.max_batch_response_bytes)
        await exchange.finish(b"[" + b",".join(parts) + b"]")
        if record is not None:
            self.rt.live.forget_if_idle(record.id)

