"""Streamable HTTP at one path, serving both protocol eras (POST, GET, DELETE).

Classification follows the wire digest's Part C2: a request that carries the 2026-07-28
envelope (or names that revision in ``MCP-Protocol-Version``) and no session is modern and
served statelessly; everything else is 2025-era traffic, through a session unless the
session mode is ``stateless``.
"""

from __future__ import annotations

import asyncio
import logging
import types
from collections.abc import Coroutine, Generator
from typing import Any

from .. import _json
from ..asgi_types import Message, Receive, Scope, Send
from ..auth import AuthError
from ..context import AuthInfo, Inbound
from ..errors import JsonRpcErrorCode, McpError
from ..logs import LEVELS
from ..protocol.envelope import apply_envelope, check_headers
from ..protocol.jsonrpc import (
    InvalidMessage,
    bounded_batch,
    classify_message,
    error_response,
    request_message,
    settle,
    too_deep,
)
from ..protocol.versions import (
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    Era,
    supports_batches,
)
from ..queues import BoundedQueue
from ..runtime import Runtime
from ..sessions.base import SessionRecord, is_session_id, new_session_id
from ..sessions.events import PRIME, split_event_id
from ..sessions.memory import SessionCapacityError
from .authn import authenticate, identity_of, refuse, tenant_of
from .cors import Cors
from .exchange import HttpExchange, StreamSink, json_response, priming_event
from .guard import BodyTooLarge, OriginGuard, accepts, read_body
from .live import InFlight, Live
from .sse import SseWriter, event

__all__ = ["HttpTransport", "deliver_route"]

log = logging.getLogger("mcpcore.transport")


_MODERN_VERSIONS = frozenset(v.encode() for v in MODERN_VERSIONS)
_SUPPORTED_VERSIONS = frozenset(v.encode() for v in SUPPORTED_VERSIONS)

_MODERN_STATUS = {
    JsonRpcErrorCode.MethodNotFound: 404,
    JsonRpcErrorCode.HeaderMismatch: 400,
    JsonRpcErrorCode.MissingRequiredClientCapability: 400,
    JsonRpcErrorCode.UnsupportedProtocolVersion: 400,
}


class RequestHeaders(dict[bytes, bytes]):
    """The request's headers as the ASGI server sent them (lower-cased names, raw values; the
    last of a repeated header), decoded only where read, and the identity its token proved.

    Kept as bytes because decoding every header of every request costs more than the rest of
    the request's header handling together."""

    auth: AuthInfo | None = None

    def text(self, name: bytes) -> str | None:
        """The header's value as text (latin-1, as HTTP defines it), or ``None``."""
        value = self.get(name)
        return value.decode("latin-1") if value is not None else None


def _err(code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"code": code, "message": message}
    if data:
        e["data"] = data
    return e


async def _error(send: Send, status: int, code: int, message: str, rid: Any = None,
                 headers: list[tuple[bytes, bytes]] | None = None, data: dict[str, Any] | None = None) -> None:
    await json_response(send, status, error_response(rid, _err(code, message, data)), headers)


class HttpTransport:
    """The ASGI endpoint for ``/mcp``."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        s = rt.settings
        self.guard = OriginGuard((*s.allowed_origins, *s.cors_allowed_origins), s.allowed_hosts)
        self.cors = Cors(s.cors_allowed_origins)
        self.queue_max = s.stream_queue_max
        self.keepalive_s = s.sse_keepalive_ms / 1000
        self.limit = s.max_body_bytes
        self.limit_digits = len(str(s.max_body_bytes))  # a shorter Content-Length is within the limit
        self.mode = rt.session_mode
        self.dispatcher = rt.dispatcher
        self.max_depth = s.max_json_depth
        self.depth_floor = 2 * s.max_json_depth  # a shorter body cannot nest that deep

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = RequestHeaders(scope["headers"])
        reason = self.guard.check(scope, headers.get(b"host"), headers.get(b"origin"))
        if reason is not None:
            log.warning("refused request: %s", reason)
            await _error(send, 403, JsonRpcErrorCode.InvalidRequest, f"Forbidden: {reason}.")
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
            await self._post(scope, receive, send, headers)
        elif method == "GET":
            await self._get(scope, receive, send, headers)
        elif method == "DELETE":
            await self._delete(send, headers)
        else:
            await _error(send, 405, JsonRpcErrorCode.InvalidRequest, "Method not allowed.",
                         headers=[(b"allow", b"GET, POST, DELETE")])

    def _identity(self, headers: RequestHeaders) -> tuple[str, str, str] | None:
        return identity_of(headers.auth)

    # -- POST -----------------------------------------------------------------------------------

    async def _post(self, scope: Scope, receive: Receive, send: Send, headers: RequestHeaders) -> None:
        ctype = headers.get(b"content-type", b"")
        if ctype != b"application/json" and ctype.split(b";", 1)[0].strip().lower() != b"application/json":
            await _error(send, 415, JsonRpcErrorCode.InvalidRequest, "Unsupported Media Type: use application/json.")
            return
        accept = headers.get(b"accept")
        if accept not in _ACCEPT_BOTH and not accepts(accept, "application/json", "text/event-stream"):
            await _error(send, 406, JsonRpcErrorCode.InvalidRequest,
                         "Not Acceptable: Accept must list application/json and text/event-stream.")
            return
        length = headers.get(b"content-length")
        if self.limit and length is not None and len(length) >= self.limit_digits and length.isdigit() and \
                int(length) > self.limit:
            await _error(send, 413, JsonRpcErrorCode.InvalidRequest,
                         f"Payload Too Large: the limit is {self.limit} bytes.")
            return
        try:
            message = await receive()
            if message["type"] != "http.request" or message.get("more_body"):  # streamed in parts
                body = await read_body(_replay(message, receive), self.limit, None)
                if body is None:
                    return
            else:
                body = message.get("body", b"")
                if self.limit and len(body) > self.limit:
                    raise BodyTooLarge
        except BodyTooLarge:
            await _error(send, 413, JsonRpcErrorCode.InvalidRequest,
                         f"Payload Too Large: the limit is {self.limit} bytes.")
            return
        try:
            msg = _json.loads(body)
        except _json.JSONDecodeError:
            await _error(send, 400, JsonRpcErrorCode.ParseError, "Parse error: the body is not valid JSON.")
            return
        if len(body) > self.depth_floor and body.count(b"{") + body.count(b"[") > self.max_depth and \
                too_deep(msg, self.max_depth):
            await _error(send, 400, JsonRpcErrorCode.InvalidRequest,
                         f"Bad Request: JSON nested deeper than {self.max_depth} levels.")
            return
        if type(msg) is list:
            await self._batch(scope, receive, send, headers, msg)
            return
        try:
            kind = classify_message(msg)
        except InvalidMessage as exc:
            await _error(send, 400, exc.code, exc.message, exc.request_id)
            return
        if kind == "request" and b"mcp-session-id" not in headers:
            params = msg.get("params")
            meta = params.get("_meta") if type(params) is dict else None
            if (type(meta) is dict and META_PROTOCOL_VERSION in meta) or \
                    headers.get(b"mcp-protocol-version", b"").strip() in _MODERN_VERSIONS:
                await self._modern(receive, send, headers, msg)
                return
        await self._legacy(receive, send, headers, msg, kind, headers.text(b"mcp-session-id"))

    # -- 2026-07-28 -----------------------------------------------------------------------------

    async def _modern(self, receive: Receive, send: Send, headers: RequestHeaders, msg: dict[str, Any]) -> None:
        rid = msg["id"]
        method = msg["method"]
        params = msg.get("params") or {}
        req = Inbound(method, rid, Era.MODERN, self.rt.services, headers.auth,
                              self._tenant(headers) if headers.auth is not None or self.rt.auth is not None
                              else "default")
        if b"traceparent" in headers:
            req.trace_headers = _trace(headers)
        try:
            meta = params.get("_meta")
            if type(meta) is not dict or META_PROTOCOL_VERSION not in meta:
                raise McpError(JsonRpcErrorCode.InvalidParams,
                               f"Missing required _meta field: {META_PROTOCOL_VERSION}.", {"reason": "missing_meta"})
            apply_envelope(meta, req)
        except McpError as exc:
            if exc.code == JsonRpcErrorCode.UnsupportedProtocolVersion:
                try:
                    check_headers(headers, msg, exc.data["requested"] if exc.data else "", None)
                except McpError as mismatch:
                    exc = mismatch
            await json_response(send, 400, error_response(rid, exc.to_wire(req.request_id)))
            return
        try:
            hp = None
            if method == "tools/call" and type(params.get("name")) is str:
                tool = self.dispatcher.registry.tools.get(params["name"])
                hp = tool.header_params if tool is not None else None
            check_headers(headers, msg, req.protocol_version, hp)
        except McpError as exc:
            await json_response(send, 400, error_response(rid, exc.to_wire(req.request_id)))
            return
        if not self.dispatcher.supports(method, Era.MODERN):
            await json_response(send, 404, error_response(rid, _err(
                JsonRpcErrorCode.MethodNotFound, f"Method not found: {method}", {"requestId": req.request_id})))
            return
        if "inputResponses" in params:
            ir = params["inputResponses"]
            req.input_responses = ir if type(ir) is dict else None
        rs = params.get("requestState")
        if type(rs) is str:
            req.request_state = rs
        exchange = HttpExchange(send, self.keepalive_s, None, None, self.queue_max)
        req.outbound = exchange
        # Closing the stream cancels the request. Watching for that needs a task, started only
        # once the handler actually waits for something: its first step runs here, and a
        # handler that finishes without suspending never pays for the watcher.
        coro = self.dispatcher.handle(msg, req, supported=True)
        try:
            step = coro.send(None)
        except StopIteration as done:
            body: bytes = done.value
        else:
            finished = await _watched(coro, step, receive, req)
            if finished is None:
                exchange.abandon()
                return
            body = finished
        if req.error_code is None:
            await exchange.finish(body)
            return
        status = _MODERN_STATUS.get(req.error_code, 200)  # type: ignore[call-overload]
        override, extra = self._error_headers(req)
        await exchange.finish(body, override or status, extra)

    def _tenant(self, headers: RequestHeaders) -> str | None:
        """``default`` without auth; the token's ``tid`` (or none: ``ctx.state`` fails closed) with it."""
        return tenant_of(self.rt, headers.auth)

    def _error_headers(self, req: Inbound) -> tuple[int | None, list[tuple[bytes, bytes]]]:
        """A missing scope is answered 403 with a challenge that names no scope."""
        if req.error_code == JsonRpcErrorCode.Forbidden and (req.error_data or {}).get(
                "reason") == "insufficient_scope":
            challenge = AuthError.insufficient_scope(()).www_authenticate(None, include_scope=False) or "Bearer"
            return 403, [(b"www-authenticate", challenge.encode())]
        if req.error_code == JsonRpcErrorCode.Unauthorized:
            return 401, [(b"www-authenticate", b'Bearer realm="mcp"')]
        return None, []

    # -- 2025 era -------------------------------------------------------------------------------

    async def _session(self, send: Send, sid: str | None, rid: Any,
                       headers: RequestHeaders | None = None) -> SessionRecord | bool | None:
        """The session a 2025-era request names, checked against the caller's identity (bound on
        its first authenticated use); ``False`` when a response was already sent."""
        if sid is None or self.mode == "stateless":
            if sid is None and self.mode == "stateful":
                await _error(send, 400, JsonRpcErrorCode.InvalidRequest,
                             "Bad Request: Mcp-Session-Id header is required (initialize first).", rid)
                return False
            return None
        try:
            record = await self.rt.sessions.get(sid) if is_session_id(sid) else None
        except McpError as exc:
            await json_response(send, 503, error_response(rid, exc.to_wire()))
            return False
        identity = self._identity(headers) if headers is not None and headers.auth is not None else None
        if record is not None and record.identity != identity:
            if record.identity is None and identity is not None:
                record.identity = identity
                await self.rt.sessions.save(record)
            else:
                log.warning("refused a session used by another identity", extra={"fields": {"sessionId": sid[:8]}})
                record = None
        if record is None:
            await _error(send, 404, JsonRpcErrorCode.InvalidRequest,
                         "Session not found or expired; initialize a new session.", rid)
            return False
        return record

    def _version_ok(self, headers: RequestHeaders) -> bool:
        pv = headers.get(b"mcp-protocol-version")
        return pv is None or pv in _SUPPORTED_VERSIONS or pv.strip() in _SUPPORTED_VERSIONS

    async def _legacy(self, receive: Receive, send: Send, headers: RequestHeaders, msg: dict[str, Any], kind: str,
                      sid: str | None) -> None:
        rid = msg.get("id") if kind == "request" else None
        if not self._version_ok(headers):
            pv = headers.text(b"mcp-protocol-version")
            await _error(send, 400, JsonRpcErrorCode.InvalidRequest,
                         f"Bad Request: unsupported MCP-Protocol-Version {pv!r}.", rid,
                         data={"supported": list(SUPPORTED_VERSIONS)})
            return
        if kind == "request" and msg["method"] == "initialize":
            await self._initialize(receive, send, headers, msg, sid)
            return
        record = await self._session(send, sid, rid, headers)
        if record is False:
            return
        assert record is None or isinstance(record, SessionRecord)
        if kind == "notification":
            self._notification(msg, record)
            await _accepted(send)
        elif kind == "response":
            self._client_response(msg, record)
            await _accepted(send)
        else:
            await self._legacy_request(receive, send, headers, msg, record)

    async def _initialize(self, receive: Receive, send: Send, headers: RequestHeaders, msg: dict[str, Any],
                          sid: str | None) -> None:
        rid = msg["id"]
        if sid is not None and self.mode != "stateless":
            await _error(send, 400, JsonRpcErrorCode.InvalidRequest,
                         "Bad Request: initialize starts a session and must not carry Mcp-Session-Id.", rid)
            return
        record = SessionRecord(id=new_session_id(), identity=self._identity(headers)) \
            if self.mode != "stateless" else None
        req = Inbound(method="initialize", jsonrpc_id=rid, era=Era.LEGACY, services=self.rt.services,
                              session=record, auth=headers.auth, tenant_id=self._tenant(headers))
        body = await self.dispatcher.handle(msg, req)
        extra: list[tuple[bytes, bytes]] = []
        if record is not None and req.error_code is None:
            try:
                await self.rt.sessions.create(record)
            except SessionCapacityError as exc:
                await json_response(send, 503, error_response(rid, exc.to_wire(req.request_id)))
                return
            except McpError as exc:
                await json_response(send, 503, error_response(rid, exc.to_wire(req.request_id)))
                return
            extra.append((b"mcp-session-id", record.id.encode()))
        await json_response(send, 200, body, extra)

    def _inbound_for(self, msg: dict[str, Any], headers: RequestHeaders, record: SessionRecord | None) -> Inbound:
        auth = headers.auth
        req = Inbound(msg["method"], msg["id"], Era.LEGACY, self.rt.services, auth,
                              self._tenant(headers) if auth is not None or self.rt.auth is not None else "default")
        if record is not None:
            req.session = record
            req.session_id = record.id
            req.protocol_version = record.protocol_version
            req.client_capabilities = record.client_capabilities
            req.client_info = record.client_info
            req.client_log_level = LEVELS[record.log_level] if record.log_level else 0
        else:
            req.session_id = self._stateless_id()
            req.protocol_version = (headers.text(b"mcp-protocol-version") or "2025-03-26").strip()
            req.client_log_level = 0
        params = msg.get("params")
        if params:
            meta = params.get("_meta")
            if type(meta) is dict:
                req.meta = meta
                token = meta.get("progressToken")
                if type(token) is str or type(token) is int:
                    req.progress_token = token
            ir = params.get("inputResponses")
            if type(ir) is dict:
                req.input_responses = ir
            rs = params.get("requestState")
            if type(rs) is str:
                req.request_state = rs
        if b"traceparent" in headers:
            req.trace_headers = _trace(headers)
        return req

    def _stateless_id(self) -> str | None:
        """Under ``stateless``, a fresh token per request when the app opts in to exposing it
        (``expose_stateless_session_id``); otherwise no session id, so code that treats
        ``ctx.session_id`` as durable fails closed."""
        return new_session_id() if self.mode == "stateless" and self.rt.expose_stateless_session_id else None

    def sink_for(self, record: SessionRecord) -> StreamSink | None:
        """The sink of a new POST response stream on ``record`` (:class:`SessionLink`)."""
        return self._sink(record)

    def _sink(self, record: SessionRecord | None, stream_id: str | None = None) -> StreamSink | None:
        """Where a stateful session's stream is buffered for resumption (``None``: not resumable)."""
        if record is None or self.rt.events is None:
            return None
        return StreamSink(self.rt.events, record.id, stream_id,
                          prime=record.protocol_version >= "2025-11-25", retry_ms=self.rt.settings.sse_retry_ms)

    async def _legacy_request(self, receive: Receive, send: Send, headers: RequestHeaders, msg: dict[str, Any],
                              record: SessionRecord | None) -> None:
        req = self._inbound_for(msg, headers, record)
        # The answer does not repeat Mcp-Session-Id: the client knows it (it sent it), and the
        # protocol asks for it only on the response to initialize.
        exchange = HttpExchange(send, self.keepalive_s, record, self, self.queue_max)
        req.outbound = exchange
        body = await self._run(msg, req, record.id if record is not None else None)
        if body is None:
            return
        if req.error_code is None:
            await exchange.finish(body)
        else:
            status, extra = self._error_headers(req)
            if req.error_code == JsonRpcErrorCode.ServiceUnavailable:
                status = 503
            await exchange.finish(body, status or 200, extra)
        if record is not None:
            self.rt.live.forget_if_idle(record.id)

    async def _run(self, msg: dict[str, Any], req: Inbound, session_id: str | None) -> bytes | None:
        """Dispatch with cancellation by ``notifications/cancelled`` on the session."""
        # The first step runs here: a handler that finishes without waiting could not have been
        # cancelled, so only one that suspends is registered as in flight.
        coro = self.dispatcher.handle(msg, req)
        try:
            step = coro.send(None)
        except StopIteration as done:
            result: bytes = done.value
            return result
        rid = msg["id"]
        task = asyncio.current_task()
        entry = InFlight(task, req)
        live = self.rt.live.get(session_id) if session_id is not None else None
        if live is not None:
            live.inflight[rid] = entry
        try:
            return await _resume(coro, step)
        except asyncio.CancelledError:
            if entry.cancelled and task is not None and task.uncancel() == 0:
                return error_response(rid, _err(JsonRpcErrorCode.RequestCancelled, "Request cancelled.",
                                                {"requestId": req.request_id}))
            raise
        finally:
            if live is not None and live.inflight.get(rid) is entry:
                del live.inflight[rid]

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

    async def ask_client(self, session_id: str, exchange: HttpExchange, method: str,
                         params: dict[str, Any] | None) -> dict[str, Any]:
        """Send a request to the client on ``exchange`` and wait for its answer (which may be
        posted to any instance: it is routed back here)."""
        live = self.rt.live.get(session_id)
        rid = f"srv-{next(live.ids)}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        live.pending[rid] = fut
        message = request_message(rid, method, params)
        try:
            exchange.post(message)
            await exchange.drain()
            return await asyncio.wait_for(fut, self.rt.settings.client_request_timeout_ms / 1000)
        except TimeoutError:
            raise McpError(JsonRpcErrorCode.Timeout, f"The client did not answer {method} in time.") from None
        finally:
            live.pending.pop(rid, None)

    async def _batch(self, scope: Scope, receive: Receive, send: Send, headers: RequestHeaders,
                     msgs: list[Any]) -> None:
        sid = headers.text(b"mcp-session-id")
        if not msgs:
            await _error(send, 400, JsonRpcErrorCode.InvalidRequest, "An empty batch is not a valid request.")
            return
        record = await self._session(send, sid, None, headers)
        if record is False:
            return
        assert record is None or isinstance(record, SessionRecord)
        version = record.protocol_version if record is not None else (
            headers.text(b"mcp-protocol-version") or "2025-03-26").strip()
        if not supports_batches(version):
            await _error(send, 400, JsonRpcErrorCode.InvalidRequest,
                         f"Bad Request: JSON-RPC batches are not part of protocol {version}.")
            return
        cap = self.rt.settings.max_batch_messages
        if len(msgs) > cap:
            await _error(send, 400, JsonRpcErrorCode.InvalidRequest,
                         f"Bad Request: a batch holds at most {cap} messages; this one has {len(msgs)}.")
            return
        requests: list[dict[str, Any]] = []
        errors: list[bytes] = []
        ids: set[str | int] = set()
        for m in msgs:
            try:
                kind = classify_message(m)
            except InvalidMessage as exc:
                errors.append(error_response(exc.request_id, _err(exc.code, exc.message)))
                continue
            if kind == "request" and m["id"] in ids:
                errors.append(error_response(m["id"], _err(JsonRpcErrorCode.InvalidRequest,
                                                           "Duplicate request id in the batch.")))
            elif kind == "request" and m["method"] == "initialize":
                errors.append(error_response(m["id"], _err(JsonRpcErrorCode.InvalidRequest,
                                                           "initialize must not be part of a batch.")))
            elif kind == "request":
                ids.add(m["id"])
                requests.append(m)
            elif kind == "notification":
                self._notification(m, record)
            else:
                self._client_response(m, record)
        if not requests and not errors:
            await _accepted(send)
            return
        exchange = HttpExchange(send, self.keepalive_s, record, self, self.queue_max)
        session_id = record.id if record is not None else None

        async def one(m: dict[str, Any]) -> bytes | None:
            req = self._inbound_for(m, headers, record)
            req.outbound = exchange
            return await self._run(m, req, session_id)

        results = await asyncio.gather(*(one(m) for m in requests))
        parts = bounded_batch(errors, list(zip(requests, results, strict=True)),
                              self.rt.settings.max_batch_response_bytes)
        await exchange.finish(b"[" + b",".join(parts) + b"]")
        if session_id is not None:
            self.rt.live.forget_if_idle(session_id)

    # -- GET: the standalone stream -------------------------------------------------------------

    async def _get(self, scope: Scope, receive: Receive, send: Send, headers: RequestHeaders) -> None:
        if not accepts(headers.get(b"accept"), "text/event-stream"):
            await _error(send, 406, JsonRpcErrorCode.InvalidRequest, "Not Acceptable: use text/event-stream.")
            return
        if self.mode == "stateless":
            await _error(send, 405, JsonRpcErrorCode.InvalidRequest,
                         "Method Not Allowed: this server keeps no sessions, so it has no standalone stream.",
                         headers=[(b"allow", b"POST")])
            return
        sid = headers.text(b"mcp-session-id")
        if sid is None:
            await _error(send, 400, JsonRpcErrorCode.InvalidRequest, "Bad Request: Mcp-Session-Id header is required.")
            return
        record = await self._session(send, sid, None, headers)
        if record is False or record is None:
            return
        assert isinstance(record, SessionRecord)
        if not self._version_ok(headers):
            await _error(send, 400, JsonRpcErrorCode.InvalidRequest, "Bad Request: unsupported MCP-Protocol-Version.")
            return
        last = headers.text(b"last-event-id")
        parsed = split_event_id(last.strip()) if last else None
        if last and (parsed is None or self.rt.events is None):
            log.info("Last-Event-ID %r is not resumable here; replaying nothing", last[:100])
        resume = parsed is not None and self.rt.events is not None and parsed[0] != STANDALONE
        live = self.rt.live.get(record.id)
        if not resume and live.get_stream is not None:
            await _error(send, 409, JsonRpcErrorCode.InvalidRequest,
                         "Conflict: this session already has an open stream.")
            return
        slots = self.rt.stream_slots
        try:
            token = await slots.acquire(record.id) if slots is not None else None
        except Exception:
            log.warning("stream slots unreachable", exc_info=True)
            await _error(send, 503, JsonRpcErrorCode.ServiceUnavailable,
                         "The session store is unreachable; retry shortly.", headers=[(b"retry-after", b"2")])
            return
        if slots is not None and token is None:
            await _error(send, 409, JsonRpcErrorCode.InvalidRequest,
                         f"Conflict: this session has {self.rt.settings.max_streams_per_session} open streams already.")
            return
        try:
            if resume:
                assert parsed is not None
                await self._resume(receive, send, record, parsed[0], parsed[1])
            else:
                await self._stream(receive, send, record, live, parsed[1] if parsed is not None else None)
        finally:
            if slots is not None and token is not None:
                try:
                    await slots.release(record.id, token)
                except Exception:  # the lease lapses by itself
                    log.warning("could not release a stream slot", exc_info=True)

    async def _resume(self, receive: Receive, send: Send, record: SessionRecord, stream_id: str, after: str) -> None:
        """Replay one stream after ``after`` from the shared buffer, then follow it to its end."""
        assert self.rt.events is not None
        writer = SseWriter(send, [(b"mcp-session-id", record.id.encode())], self.keepalive_s)
        events = self.rt.events.follow(record.id, stream_id, after)
        gone = asyncio.get_running_loop().create_task(_until_disconnect(receive))
        try:
            await writer.start()
            while True:
                nxt = asyncio.ensure_future(anext(events))
                done, _ = await asyncio.wait({nxt, gone}, return_when=asyncio.FIRST_COMPLETED)
                if nxt not in done:
                    nxt.cancel()
                    break
                try:
                    eid, data = nxt.result()
                except StopAsyncIteration:
                    break
                except LookupError:
                    log.info("Last-Event-ID %s_%s is unknown or evicted; replaying nothing", stream_id, after)
                    break
                if data != PRIME:
                    await writer.write(event(data, eid))
        finally:
            gone.cancel()
            await events.aclose()
            await writer.close()

    async def _stream(self, receive: Receive, send: Send, record: SessionRecord, live: Live,
                      after: str | None = None) -> None:
        queue: BoundedQueue[bytes | dict[str, Any]] = BoundedQueue(self.queue_max)
        from ..server.notify import notification_for, reaches

        shared = self.rt.shared

        tenant = record.identity[0] if record.identity is not None else tenant_of(self.rt, None)

        def on_event(ev: dict[str, Any]) -> None:
            if ev.get("origin") == record.id:
                return
            if ev.get("kind") == "resource":
                if not reaches(ev, tenant):
                    return
                if shared:
                    queue.put_nowait(ev)  # subscribed? decided in the loop, against the stored record
                    return
                if ev.get("uri") not in record.subscriptions:
                    return
            note = notification_for(ev)
            if note is not None:
                queue.put_nowait(_json.dumps(note))

        unsubscribe = self.rt.bus.subscribe(on_event)
        live.get_stream = lambda: queue.put_nowait(None)
        stop = self.dispatcher.closing.add_listener(lambda: queue.put_nowait(None))
        writer = SseWriter(send, [(b"mcp-session-id", record.id.encode())], self.keepalive_s)
        sink = self._sink(record, STANDALONE)
        gone = asyncio.get_running_loop().create_task(_until_disconnect(receive))
        try:
            await writer.start()
            if sink is not None:
                if after is not None:
                    await self._replay_standalone(writer, sink, after)
                if sink.prime:
                    await writer.write(priming_event(await sink.append(PRIME), sink.retry_ms))
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, gone}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    break
                data = getter.result()
                if data is None:
                    break
                if type(data) is dict:
                    note = notification_for(data) if data.get("uri") in await self._subscriptions(record) else None
                    if note is None:
                        continue
                    data = _json.dumps(note)
                assert type(data) is bytes
                await writer.write(event(data, await sink.append(data) if sink is not None else None))
        finally:
            gone.cancel()
            unsubscribe()
            stop()
            live.get_stream = None
            await writer.close()
            self.rt.live.forget_if_idle(record.id)

    async def _subscriptions(self, record: SessionRecord) -> set[str]:
        """The session's resource subscriptions as stored now: with a shared store another
        instance may have served the ``resources/subscribe`` (or ``unsubscribe``) since this
        stream opened. (The memory store hands out the one record, which is always current.)"""
        try:
            fresh = await self.rt.sessions.get(record.id)
        except Exception:  # the store is unreachable: keep to what this stream knew
            log.warning("session store unreachable; filtering resource updates on the stream's copy")
            return record.subscriptions
        if fresh is not None:
            record.subscriptions = fresh.subscriptions
        return record.subscriptions

    async def _replay_standalone(self, writer: SseWriter, sink: StreamSink, after: str) -> None:
        """What the standalone stream carried after ``after`` (not followed: it never ends)."""
        follower = sink.buffer.follow(sink.session_id, STANDALONE, after)
        try:
            while True:
                try:
                    eid, data = await asyncio.wait_for(anext(follower), 0.05)
                except (StopAsyncIteration, TimeoutError):
                    return
                except LookupError:
                    log.info("Last-Event-ID %s_%s is unknown or evicted; replaying nothing", STANDALONE, after)
                    return
                if data != PRIME:
                    await writer.write(event(data, eid))
        finally:
            await follower.aclose()

    # -- DELETE ---------------------------------------------------------------------------------

    async def _delete(self, send: Send, headers: RequestHeaders) -> None:
        if self.mode == "stateless":
            await _error(send, 405, JsonRpcErrorCode.InvalidRequest, "Method Not Allowed: there are no sessions.",
                         headers=[(b"allow", b"POST")])
            return
        sid = headers.text(b"mcp-session-id")
        if sid is None:
            await _error(send, 400, JsonRpcErrorCode.InvalidRequest, "Bad Request: Mcp-Session-Id header is required.")
            return
        record = await self._session(send, sid, None, headers)
        if record is False or record is None:
            return
        assert isinstance(record, SessionRecord)
        try:
            await self.rt.sessions.delete(record.id)
            if self.rt.events is not None:
                await self.rt.events.release(record.id)
        except McpError as exc:
            await json_response(send, 503, error_response(None, exc.to_wire()))
            return
        self.rt.live.release(record.id)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


STANDALONE = "g"


def _replay(first: Message, receive: Receive) -> Receive:
    """``receive`` with ``first``, already taken, given back first."""
    pending: list[Message] = [first]

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again


_ACCEPT_BOTH = frozenset({b"application/json, text/event-stream", b"application/json,text/event-stream",
                          b"text/event-stream, application/json", b"text/event-stream,application/json"})


def _trace(headers: RequestHeaders) -> dict[str, str] | None:
    tp = headers.text(b"traceparent")
    if tp is None:
        return None
    out = {"traceparent": tp}
    state = headers.text(b"tracestate")
    if state is not None:
        out["tracestate"] = state
    return out


def deliver_route(live: Any, event: dict[str, Any]) -> bool:
    """Apply a client's answer or cancellation to a handler waiting in this process.

    ``event`` is ``{"session": id, "message": JSON-RPC message}``; returns whether it was found
    here (when not, a shared deployment publishes it for the other instances).
    """
    entry = live.peek(event.get("session", ""))
    msg = event.get("message")
    if entry is None or type(msg) is not dict:
        return False
    if msg.get("method") == "notifications/cancelled":
        raw = msg.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        flight = entry.inflight.get(params.get("requestId"))
        if flight is None:
            return False
        reason = params.get("reason")
        flight.cancel(reason if type(reason) is str else "cancelled by the client")
        return True
    fut = entry.pending.get(str(msg.get("id")))
    if fut is None or fut.done():
        return False
    settle(fut, msg)
    return True


async def _accepted(send: Send) -> None:
    await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def _until_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _watched(coro: Coroutine[Any, Any, bytes], step: Any, receive: Receive,
                   req: Inbound) -> bytes | None:
    """Finish ``coro``, suspended at ``step``, while watching the request stream: ``None`` when
    the client closed it (the handler is cancelled)."""
    owner = asyncio.current_task()
    entry = InFlight(owner, req)
    watcher = asyncio.get_running_loop().create_task(_watch_disconnect(receive, entry))
    try:
        return await _resume(coro, step)
    except asyncio.CancelledError:
        if entry.cancelled and owner is not None and owner.uncancel() == 0:
            return None
        raise
    finally:
        watcher.cancel()


@types.coroutine
def _resume(coro: Coroutine[Any, Any, bytes], step: Any) -> Generator[Any, Any, bytes]:
    """Await the rest of ``coro``, whose first step already ran and yielded ``step``."""
    while True:
        try:
            sent = yield step
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                step = coro.throw(exc)
            except StopIteration as done:
                result: bytes = done.value
                return result
        else:
            try:
                step = coro.send(sent)
            except StopIteration as done:
                result = done.value
                return result


async def _watch_disconnect(receive: Receive, entry: InFlight) -> None:
    """2026-07-28: closing the response stream cancels the request."""
    try:
        await _until_disconnect(receive)
    except asyncio.CancelledError:
        return
    entry.cancel("the client closed the stream")
