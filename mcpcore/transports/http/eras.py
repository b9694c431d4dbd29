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
from ...protocol.envelope import MODERN
from ...protocol.jsonrpc import InvalidMessage, classify_message
from ...protocol.limits import MAX_ID
from ...protocol.methods import METHODS
from ...protocol.versions import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, is_handshake, names_modern_era
from .modern import ModernPost
from .sessions import SessionPost
from .streams import Streams
from .wire import HttpContext, RequestHeaders, error

__all__ = ["SessionOrEnvelope"]

_COMMON = frozenset(m.name for m in METHODS if m.name != "initialize")
"""The methods a common 2026-07-28 request may name (every one of the method table's but the
2025 handshake): a request naming another takes the general way."""


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
        (chosen here, awaited by the endpoint, so the choice costs no coroutine of its own).

        The common requests are recognised first, in one pass: a JSON-RPC 2.0 request with a
        valid id and a method of the table (not ``initialize``). With no envelope it is its
        session's (2025), as the general way below would find; with an envelope of exactly a
        2026-07-28 version and the client's capabilities, and no round fields, it is served
        by :meth:`ModernPost.serve`, which then builds its Inbound without reading the envelope
        again. Anything else (another envelope included) takes the general way."""
        t = type(msg)
        if t is dict:
            method = msg.get("method")
            rid = msg.get("id")
            if type(method) is str and method in _COMMON and msg.get("jsonrpc") == "2.0" and (
                    type(rid) is int or (type(rid) is str and len(rid) <= MAX_ID)):
                params = msg.get("params")
                meta = params.get("_meta") if type(params) is dict else None
                if type(meta) is dict:
                    if len(meta) == 2 and type(version := meta.get(META_PROTOCOL_VERSION)) is str and \
                            version in MODERN and type(meta.get(META_CLIENT_CAPABILITIES)) is dict and \
                            "inputResponses" not in params and "requestState" not in params:
                        return self.modern.serve(receive, send, headers, msg, True)
                elif params is None or type(params) is dict:  # a request without an envelope: its session's
                    sid = headers.get(b"mcp-session-id")
                    return self.sessions.serve(receive, send, headers, msg, "request",
                                               sid.decode("latin-1") if sid is not None else None)
        elif t is list:
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
