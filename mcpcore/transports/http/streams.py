"""GET and DELETE on a 2025-era session: the standalone stream (server notifications), the
resumption of any of the session's streams with ``Last-Event-ID``, and ending the session."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ... import _json
from ...asgi_types import Receive, Send
from ...context import Inbound
from ...errors import JsonRpcErrorCode, McpError
from ...protocol.jsonrpc import error_response
from ...protocol.versions import Era
from ...queues import BoundedQueue
from ...server.notify import notification_for, reaches
from ...server.visibility import ViewTracker
from ...sessions.base import SessionRecord
from ...sessions.events import PRIME, split_event_id
from ...sessions.streams import caller_of
from ..authn import tenant_of
from ..exchange import StreamSink, json_response, priming_event
from ..guard import accepts
from ..inflight import next_unless_gone, until_disconnect
from ..live import Live
from ..sse import SseWriter, event
from .sessions import SessionPost
from .wire import ANSWERED, HttpContext, RequestHeaders, error

__all__ = ["STANDALONE", "Streams"]

log = logging.getLogger("mcpcore.transport")

STANDALONE = "g"
"""The stream id of a session's standalone GET stream."""


class Streams:
    """Serves GET (the standalone stream, resumption) and DELETE on a session."""

    def __init__(self, ctx: HttpContext, sessions: SessionPost) -> None:
        self.ctx = ctx
        self.rt = ctx.rt
        self.sessions = sessions

    async def _session(self, send: Send, headers: RequestHeaders, stateless: str) -> SessionRecord | None:
        """The session a GET or DELETE names; ``None`` when it was answered already (405 under
        ``stateless``, with ``stateless`` as the reason; 400 without the header; 404 unknown)."""
        if self.ctx.mode == "stateless":
            await error(send, 405, JsonRpcErrorCode.InvalidRequest, f"Method Not Allowed: {stateless}.",
                        headers=[(b"allow", b"POST")])
            return None
        sid = headers.text(b"mcp-session-id")
        if sid is None:
            await error(send, 400, JsonRpcErrorCode.InvalidRequest, "Bad Request: Mcp-Session-Id header is required.")
            return None
        record = await self.sessions.lookup(send, sid, None, headers)
        return None if record is ANSWERED else record

    async def get(self, receive: Receive, send: Send, headers: RequestHeaders) -> None:
        if not accepts(headers.get(b"accept"), "text/event-stream"):
            await error(send, 406, JsonRpcErrorCode.InvalidRequest, "Not Acceptable: use text/event-stream.")
            return
        record = await self._session(send, headers, "this server keeps no sessions, so it has no standalone stream")
        if record is None:
            return
        if not headers.version_ok():
            await error(send, 400, JsonRpcErrorCode.InvalidRequest, "Bad Request: unsupported MCP-Protocol-Version.")
            return
        last = headers.text(b"last-event-id")
        parsed = split_event_id(last.strip()) if last else None
        resumable = self.ctx.buffering.resumable
        if last and (parsed is None or not resumable):
            log.info("Last-Event-ID %r is not resumable here; replaying nothing", last[:100])
        resume = parsed is not None and resumable and parsed[0] != STANDALONE
        live = self.rt.live.get(record.id)
        if not resume and live.get_stream is not None:
            await error(send, 409, JsonRpcErrorCode.InvalidRequest,
                        "Conflict: this session already has an open stream.")
            return
        callers = self.ctx.dispatcher.core.streams
        caller = caller_of(headers.auth, headers.scope)
        try:
            callers.take(caller)
        except McpError as exc:
            await error(send, 503, exc.code, exc.message, data=exc.data)
            return
        try:
            await self._counted(receive, send, headers, record, live, resume, parsed)
        finally:
            callers.give(caller)

    async def _counted(self, receive: Receive, send: Send, headers: RequestHeaders, record: SessionRecord, live: Live,
                       resume: bool, parsed: tuple[str, str] | None) -> None:
        """A GET stream counted against its caller's bound: its session's slot, then the stream."""
        slots = self.rt.stream_slots
        try:
            token = await slots.acquire(record.id) if slots is not None else None
        except Exception:
            log.warning("stream slots unreachable", exc_info=True)
            await error(send, 503, JsonRpcErrorCode.ServiceUnavailable,
                        "The session store is unreachable; retry shortly.", headers=[(b"retry-after", b"2")])
            return
        if slots is not None and token is None:
            await error(send, 409, JsonRpcErrorCode.InvalidRequest,
                        f"Conflict: this session has {self.rt.settings.max_streams_per_session} open streams already.")
            return
        try:
            if resume:
                assert parsed is not None
                await self._resume(receive, send, record, parsed[0], parsed[1])
            else:
                viewer = Inbound("GET", None, Era.LEGACY, self.rt.services, headers.auth,
                                 headers.auth.tenant_id if headers.auth is not None else tenant_of(self.rt, None))
                await self._standalone(receive, send, record, live, viewer, parsed[1] if parsed is not None else None)
        finally:
            if slots is not None and token is not None:
                try:
                    await slots.release(record.id, token)
                except Exception:  # the lease lapses by itself
                    log.warning("could not release a stream slot", exc_info=True)

    async def _resume(self, receive: Receive, send: Send, record: SessionRecord, stream_id: str, after: str) -> None:
        """Replay one stream after ``after`` from the shared buffer, then follow it to its end."""
        writer = SseWriter(send, [(b"mcp-session-id", record.id.encode())], self.ctx.keepalive_s)
        events = self.ctx.buffering.follow(record.id, stream_id, after)
        gone = asyncio.get_running_loop().create_task(until_disconnect(receive))
        nxt: asyncio.Future[tuple[str, bytes]] | None = None
        try:
            await writer.start()
            while True:
                nxt = asyncio.ensure_future(anext(events))
                done, _ = await asyncio.wait({nxt, gone}, return_when=asyncio.FIRST_COMPLETED)
                if nxt not in done:
                    break
                try:
                    eid, data = nxt.result()
                except StopAsyncIteration:
                    break
                except LookupError:
                    log.info("Last-Event-ID %s_%s is unknown or evicted; replaying nothing", stream_id, after[:40])
                    break
                if data != PRIME:
                    await writer.write(event(data, eid))
        finally:
            gone.cancel()
            if nxt is not None and not nxt.done():  # the client left: end the pending read, then close the reader
                nxt.cancel()
                await asyncio.wait({nxt})
            await events.aclose()
            await writer.close()

    async def _standalone(self, receive: Receive, send: Send, record: SessionRecord, live: Live, viewer: Inbound,
                          after: str | None = None) -> None:
        """The session's GET stream: notifications from the bus until the client or the
        session goes (or the client reads too slowly: its queue is bounded); list changes only
        when the caller's view changed (``viewer``: the caller, as the stream's request)."""
        queue: BoundedQueue[bytes | dict[str, Any]] = BoundedQueue(self.ctx.queue_max)
        shared = self.rt.shared
        tenant = record.identity[0] if record.identity is not None else tenant_of(self.rt, None)
        view = ViewTracker(self.ctx.dispatcher.core, viewer)

        def on_event(ev: dict[str, Any]) -> None:
            to = ev.get("to")
            if to is not None:  # a notification for one session (a task's status, its progress)
                if to == record.id and type(ev.get("note")) is dict:
                    queue.put_nowait(_json.dumps(ev["note"]))
                return
            if ev.get("origin") == record.id or not view.reaches(ev):
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
        stop = self.ctx.dispatcher.closing.add_listener(lambda: queue.put_nowait(None))
        writer = SseWriter(send, [(b"mcp-session-id", record.id.encode())], self.ctx.keepalive_s)
        sink = self.ctx.buffering.sink_for(record, STANDALONE)
        gone = asyncio.get_running_loop().create_task(until_disconnect(receive))
        try:
            await writer.start()
            if sink is not None:
                if after is not None:
                    await self._replay_standalone(writer, sink, after)
                if sink.prime:
                    await writer.write(priming_event(await sink.append(PRIME), sink.retry_ms))
            while True:
                data = await next_unless_gone(queue.get, gone)
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
                    log.info("Last-Event-ID %s_%s is unknown or evicted; replaying nothing", STANDALONE, after[:40])
                    return
                if data != PRIME:
                    await writer.write(event(data, eid))
        finally:
            await follower.aclose()

    async def delete(self, send: Send, headers: RequestHeaders) -> None:
        record = await self._session(send, headers, "there are no sessions")
        if record is None:
            return
        try:
            await self.rt.sessions.delete(record.id)
            await self.ctx.buffering.release(record.id)
        except McpError as exc:
            await json_response(send, 503, error_response(None, exc.to_wire()))
            return
        self.rt.live.release(record.id)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
