"""stdio: newline-delimited JSON-RPC on stdin/stdout, logs on stderr, exit on EOF.

The message handling (:class:`MessagePump`) is shared with the 2024-11-05 HTTP+SSE transport:
both carry every message of one connection over a single outgoing channel. Each message is
classified on its own: a 2025 ``initialize`` opens the connection's 2025-era session (also when
its ``_meta`` carries envelope keys); any other request carrying the 2026-07-28 envelope is served
statelessly; everything else belongs to the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Coroutine
from typing import Any, Protocol

from .. import _json
from ..asgi_types import Scope
from ..context import AuthInfo, Inbound
from ..errors import JsonRpcErrorCode, McpError, error_object
from ..protocol.jsonrpc import InvalidMessage, classify_message, error_response, too_deep
from ..protocol.versions import META_PROTOCOL_VERSION, Era, is_handshake, supports_batches
from ..runtime import Runtime
from ..server.notify import notification_for, reaches
from ..server.visibility import ViewTracker
from ..sessions.base import SessionRecord
from .authn import identity_of
from .inflight import ask_client, deliver, run_tracked
from .intake import Refused, modern_inbound, notification_inbound, session_inbound
from .live import Live

__all__ = ["MessagePump", "StdioTransport"]

log = logging.getLogger("mcpcore.transport")


class _Writer:
    """Serialises writes to stdout, one JSON message per line."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def put(self, data: bytes) -> None:
        self._idle.clear()
        self._queue.put_nowait(data)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            data = await self._queue.get()
            if data is None:
                return
            try:
                await loop.run_in_executor(None, self._write, data + b"\n")
            except (BrokenPipeError, OSError):
                log.info("stdout closed")
                return
            finally:
                if self._queue.empty():
                    self._idle.set()

    def _write(self, data: bytes) -> None:
        buf = getattr(self._stream, "buffer", self._stream)
        buf.write(data)
        buf.flush()

    async def drain(self) -> None:
        await self._idle.wait()

    async def close(self) -> None:
        self._queue.put_nowait(None)
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task


class Channel(Protocol):
    """Where a connection's outgoing messages go, in order."""

    def put(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


class _Out:
    """A request's outbound channel on a shared connection (request-scoped messages)."""

    def __init__(self, transport: MessagePump) -> None:
        self._t = transport

    def post(self, message: dict[str, Any]) -> None:
        self._t.writer.put(_json.dumps(message))

    async def drain(self) -> None:
        await self._t.writer.drain()

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        return await self._t.client_request(method, params)


class MessagePump:
    """One connection's messages in, its responses and notifications out through ``writer``.

    Requests get their Inbound from the intake and run through the shared in-flight handling
    (:mod:`.inflight`), as over HTTP; what is left here is the connection's framing."""

    def __init__(self, rt: Runtime, writer: Channel, origin: str = "stdio", *, auth: AuthInfo | None = None,
                 tenant_id: str | None = "default", asgi_scope: Scope | None = None) -> None:
        self.rt = rt
        self.asgi_scope = asgi_scope
        self.writer = writer
        self.origin = origin
        self.auth = auth
        self.tenant_id = tenant_id
        self.session: SessionRecord | None = None
        self._view: ViewTracker | None = None
        self.live = Live(origin)
        self._tasks: set[asyncio.Task[None]] = set()
        self._unsubscribe = rt.bus.subscribe(self._on_event)

    @property
    def in_flight(self) -> int:
        """Requests (and hooked notifications) of this connection still running."""
        return len(self._tasks)

    async def close(self, reason: str) -> None:
        """Stop: cancel what runs, fail what waits on the client, wait for the tasks."""
        self._unsubscribe()
        for entry in list(self.live.inflight.values()):
            entry.cancel(reason)
        for fut in self.live.pending.values():
            if not fut.done():
                fut.set_exception(McpError(JsonRpcErrorCode.InvalidRequest, "The connection closed."))
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _on_event(self, event: dict[str, Any]) -> None:
        if self.session is None or event.get("origin") == self.session.id:
            return
        to = event.get("to")
        if to is not None:  # a notification for one session (a task's status, its progress)
            if to == self.session.id and type(event.get("note")) is dict:
                self.writer.put(_json.dumps(event["note"]))
            return
        if self._view is None:
            self._view = ViewTracker(self.rt.dispatcher.core, Inbound(
                "stdio", None, Era.LEGACY, self.rt.services, self.auth, self.tenant_id))
        if not self._view.reaches(event):
            return
        if event.get("kind") == "resource" and (event.get("uri") not in self.session.subscriptions
                                                or not reaches(event, self.tenant_id)):
            return
        note = notification_for(event)
        if note is not None:
            self.writer.put(_json.dumps(note))

    def _send_error(self, rid: Any, code: int, message: str) -> None:
        self.writer.put(error_response(rid, error_object(code, message)))

    def handle_bytes(self, line: bytes) -> None:
        """Parse and handle one message (or batch); parse errors are answered id-less."""
        try:
            msg = _json.loads(line)
        except _json.JSONDecodeError:
            self._send_error(None, JsonRpcErrorCode.ParseError, "Parse error: the line is not valid JSON.")
            return
        limit = self.rt.settings.max_json_depth
        if len(line) > 2 * limit and too_deep(msg, limit):
            self._send_error(None, JsonRpcErrorCode.InvalidRequest, f"JSON nested deeper than {limit} levels.")
            return
        self.handle(msg)

    def handle(self, msg: Any) -> None:
        """Handle one parsed message (or batch): requests run as tasks, in order of arrival."""
        msgs = msg if type(msg) is list else [msg]
        if type(msg) is list and not (self.session and supports_batches(self.session.protocol_version)):
            self._send_error(None, JsonRpcErrorCode.InvalidRequest, "JSON-RPC batches are not part of this protocol.")
            return
        cap = self.rt.settings.max_batch_messages
        if len(msgs) > cap:
            self._send_error(None, JsonRpcErrorCode.InvalidRequest, f"A batch holds at most {cap} messages.")
            return
        for m in msgs:
            try:
                kind = classify_message(m)
            except InvalidMessage as exc:
                self._send_error(exc.request_id, exc.code, exc.message)
                continue
            if kind == "request":
                self._spawn(self._request(m))
            elif kind == "notification" and self.rt.dispatcher.hooks_notifications:
                self._spawn(self._notified(m))
            else:  # a notification (only notifications/cancelled matters here) or the client's answer
                deliver(self.live, m)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _notified(self, msg: dict[str, Any]) -> None:
        req = notification_inbound(msg, self.rt.services, self.auth, self.tenant_id, self.session, self.origin)
        req.asgi_scope = self.asgi_scope

        def handling() -> None:
            deliver(self.live, msg)

        await self.rt.dispatcher.notification(msg, req, handling)

    async def _request(self, msg: dict[str, Any]) -> None:
        params = msg.get("params") or {}
        meta = params.get("_meta")
        services = self.rt.services
        if type(meta) is dict and META_PROTOCOL_VERSION in meta and not is_handshake(msg):
            req = modern_inbound(msg, services, self.auth, self.tenant_id, self.origin)
            if type(req) is Refused:
                self.writer.put(error_response(msg["id"], req.error.to_wire(req.request_id)))
                return
            assert isinstance(req, Inbound)
        else:
            if msg["method"] == "initialize":
                self.session = SessionRecord(id=self.origin, identity=identity_of(self.auth))
            req = session_inbound(msg, services, self.auth, self.tenant_id, self.session, transport=self.origin)
            req.session = self.session
        req.outbound = _Out(self)
        req.asgi_scope = self.asgi_scope
        req.check_sizes = True
        body = await run_tracked(self.rt.dispatcher.handle(msg, req), req, self.live)
        if body is not None:  # a cancelled request is not answered
            self.writer.put(body)

    async def client_request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Send a request to the client and wait for its answer."""
        return await ask_client(self.live, lambda m: self.writer.put(_json.dumps(m)), self.writer.drain, method,
                                params, self.rt.settings.client_request_timeout_ms / 1000)


class StdioTransport:
    """Serves one client over a pair of streams until EOF."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def serve(self, stdin: Any = None, stdout: Any = None) -> None:
        writer = _Writer(stdout or sys.stdout)
        writer.start()
        pump = MessagePump(self.rt, writer, "stdio")
        try:
            async for line in _lines(stdin or sys.stdin):
                if line.strip():
                    pump.handle_bytes(line)
        finally:
            await pump.close("stdin closed")
            await writer.drain()
            await writer.close()


async def _lines(stream: Any) -> Any:
    """Yield lines from ``stream`` without blocking the loop (a pipe reader, else a thread)."""
    loop = asyncio.get_running_loop()
    if isinstance(stream, asyncio.StreamReader):
        reader = stream
    else:
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        try:
            fd = stream.fileno()
            pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        except (OSError, ValueError, AttributeError):
            buf = getattr(stream, "buffer", stream)
            while True:
                line = await loop.run_in_executor(None, buf.readline)
                if not line:
                    return
                yield line
            return
    while True:
        line = await reader.readline()
        if not line:
            return
        yield line
