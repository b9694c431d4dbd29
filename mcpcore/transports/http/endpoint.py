"""Streamable HTTP at one path, serving both protocol eras (POST, GET, DELETE).

The request's way through this package is the app's stack (:mod:`mcpcore.stack`), run one way
in this coroutine: the door layers (:mod:`.door`: host and origin guard, CORS, auth), the body
limit for a POST, then the session-or-envelope layer (:mod:`.eras`) that serves the message in
its era through :mod:`.modern` or :mod:`.sessions`, or a GET or DELETE through :mod:`.streams`.
All of them share :mod:`.wire`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...asgi_types import Receive, Scope, Send
from ...errors import JsonRpcErrorCode
from ...runtime import Runtime
from .door import ANSWERED
from .wire import HttpContext, RequestHeaders, error

if TYPE_CHECKING:
    from ...stack import Stack

__all__ = ["HttpTransport"]


class HttpTransport:
    """The ASGI endpoint for ``/mcp``: the stack's HTTP layers, in order."""

    def __init__(self, rt: Runtime, stack: Stack) -> None:
        self.rt = rt
        s = rt.settings
        self.doors = tuple(layer.door for layer in stack.doors)
        self.cors = stack.cors
        self.read_body = stack.body_limit.read
        self.session_or_envelope = stack.session_or_envelope
        self.session_or_envelope.bind(HttpContext(rt, rt.dispatcher, rt.session_mode, s.sse_keepalive_ms / 1000,
                                                  s.stream_queue_max, stack.events))

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request at the endpoint's path (the app calls this method by name:
        calling the instance would look ``__call__`` up on every request)."""
        headers = RequestHeaders(scope["headers"])
        headers.scope = scope
        headers.auth = None
        for door in self.doors:
            action = door(headers, send)
            if action is not None:
                passed = await action
                if passed is None:
                    return
                send = passed
        method = scope["method"]
        if method == "POST":
            msg = await self.read_body(receive, send, headers)
            if msg is not ANSWERED:
                await self.session_or_envelope.post(receive, send, headers, msg)
        elif method == "GET":
            await self.session_or_envelope.streams.get(receive, send, headers)
        elif method == "DELETE":
            await self.session_or_envelope.streams.delete(send, headers)
        elif method == "OPTIONS":
            await self.cors.preflight(headers, send)
        else:
            await error(send, 405, JsonRpcErrorCode.InvalidRequest, "Method not allowed.",
                        headers=[(b"allow", b"GET, POST, DELETE")])

    __call__ = serve
