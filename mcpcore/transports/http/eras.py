"""The session-or-envelope layer: a message becomes the request of its era.

A 2025 ``initialize`` (one with the handshake's ``protocolVersion``) opens a 2025 session
whatever else it carries (envelope keys left in its ``_meta``, 2026-07-28 headers). Any other
request that names a 2026-07-28-era version, in its ``params._meta`` envelope or in
``MCP-Protocol-Version``, is modern and served statelessly by :mod:`.modern`, an
``Mcp-Session-Id`` on it ignored. Everything else is 2025-era traffic served through the session
its ``Mcp-Session-Id`` names (:mod:`.sessions`); GET and DELETE serve a session's streams
(:mod:`.streams`). docs/architecture.md ("How a request finds its era") says why the choice is
made this way.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from ...asgi_types import Receive, Send
from ...layer import Layer
from ...protocol.jsonrpc import InvalidMessage, classify_message
from ...protocol.versions import META_PROTOCOL_VERSION, is_handshake, names_modern_era
from .modern import ModernPost
from .sessions import SessionPost
from .streams import Streams
from .wire import HttpContext, RequestHeaders, error

__all__ = ["SessionOrEnvelope"]


class SessionOrEnvelope(Layer):
    """2025: the session's record, bound to the identity (404 when it is not the caller's);
    2026-07-28: the request's ``_meta`` envelope. Either way the request's
    :class:`~mcpcore.context.Inbound` comes from the one intake (:mod:`mcpcore.transports.intake`)."""

    title = "session or envelope"
    modern: ModernPost
    sessions: SessionPost
    streams: Streams

    def where(self) -> str:
        return "mcpcore.transports.intake"

    def bind(self, ctx: HttpContext) -> None:
        """Serve through the HTTP transport's parts (once, when the transport is built)."""
        self.modern = ModernPost(ctx)
        self.sessions = SessionPost(ctx, self.modern)
        self.streams = Streams(ctx, self.sessions)

    def post(self, receive: Receive, send: Send, headers: RequestHeaders, msg: Any) -> Awaitable[None]:
        """A POST's parsed body, a batch or one message of either era: the era's serving of it
        (chosen here, awaited by the endpoint, so the choice costs no coroutine of its own)."""
        if type(msg) is list:
            return self.sessions.batch(send, headers, msg)
        try:
            kind = classify_message(msg)
        except InvalidMessage as exc:
            return error(send, 400, exc.code, exc.message, exc.request_id)
        if kind == "request":
            params = msg.get("params")
            meta = params.get("_meta") if type(params) is dict else None
            # Without a session any envelope is 2026-07-28's to answer (a version it does not serve
            # gets -32022); with one, an envelope naming a version a 2025 session cannot have. A
            # request naming 2026-07-28 only in MCP-Protocol-Version is handed over by SessionPost,
            # which reads that header anyway.
            if type(meta) is dict and META_PROTOCOL_VERSION in meta and (
                    b"mcp-session-id" not in headers or names_modern_era(meta[META_PROTOCOL_VERSION])) and (
                    msg["method"] != "initialize" or not is_handshake(msg)):
                return self.modern.serve(receive, send, headers, msg)
        sid = headers.get(b"mcp-session-id")
        return self.sessions.serve(receive, send, headers, msg, kind,
                                   sid.decode("latin-1") if sid is not None else None)
