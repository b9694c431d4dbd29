"""The HTTP server's own ceilings, enforced before the ASGI app sees a request.

:class:`LimitedHttpToolsProtocol` is uvicorn's httptools protocol with

* a cap on the request line plus header lines (``MCP_HTTP_MAX_HEADER_BYTES``) and on the number
  of header lines (``MCP_HTTP_MAX_HEADERS``): beyond either, ``431`` and the connection closes;
* a header deadline (``MCP_HTTP_HEADER_TIMEOUT_MS``, counted from the connection's opening for
  its first request, from the first byte of each later one): a request whose head is still
  incomplete is answered ``408`` and closed; a connection that sent nothing is closed silently;
* a body deadline (``MCP_HTTP_BODY_TIMEOUT_MS``, from the end of the head): ``408`` when no
  response has started (the app's ``receive()`` then sees ``http.disconnect``), else the
  connection is closed;
* a bound on open connections per process (``MCP_HTTP_MAX_CONNECTIONS``): a connection beyond it
  is answered ``503`` with ``Retry-After: 1`` and closed as soon as it is accepted, before a
  byte of it is read or parsed, so a flood of idle sockets costs no parser state and no deadline.

``mcpcore run`` serves with it. Under plain uvicorn, pass it by import path:
``uvicorn --http mcpcore.http_limits:LimitedHttpToolsProtocol server:app``. The limits come from
the served McpApp's settings when uvicorn serves one (directly or wrapped in middleware), else
from the environment.

A read that holds whole requests costs a few attribute checks: deadline timers are started
only when a read leaves a head or a body incomplete. A head is held to its cap exactly once
complete; while it arrives, a read in which a new request starts is not counted, so at most
one read (about 256 KB) more than the cap is buffered before the connection is refused.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from .config import Settings
from .metrics import hit_ceiling

__all__ = ["HttpLimits", "LimitedHttpToolsProtocol", "set_limits"]

_log = logging.getLogger("mcpcore.http")
_HEADER_OVERHEAD = 4  # ": " and CRLF around each header line
_LINGER = -2  # ``_head`` of a refused connection: what still arrives is read and dropped
_DETACHED = -3  # ``_head`` once the connection is handed to a WebSocket protocol
LINGER_SECONDS = 1.0
_CEILINGS = {b"too many connections\n": "connections", b"request header fields too large\n": "header_size",
             b"request header not received in time\n": "header_timeout",
             b"request body not received in time\n": "body_timeout"}
"""The ``ceiling`` label (``mcp_http_ceiling_hits_total``) of each refusal's body."""
"""How long a refused connection's further bytes are read and dropped before it is closed: a
close with unread bytes would reset the connection, and the client might lose the answer."""


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """The ceilings of :class:`LimitedHttpToolsProtocol`; times in seconds."""

    max_header_bytes: int = 32_768
    max_headers: int = 100
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1000

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpLimits:
        """The limits ``settings`` (the ``MCP_HTTP_*`` variables) ask for."""
        return cls(max_header_bytes=settings.http_max_header_bytes, max_headers=settings.http_max_headers,
                   header_timeout=settings.http_header_timeout_ms / 1000,
                   body_timeout=settings.http_body_timeout_ms / 1000,
                   max_connections=settings.http_max_connections)


_LIMITS: weakref.WeakKeyDictionary[Any, HttpLimits] = weakref.WeakKeyDictionary()


def set_limits(config: Any, limits: HttpLimits) -> None:
    """Serve ``config`` (a ``uvicorn.Config``) with ``limits`` instead of looking them up."""
    _LIMITS[config] = limits


def _limits_for(config: Any) -> HttpLimits:
    limits = _LIMITS.get(config)
    if limits is None:
        limits = HttpLimits.from_settings(_served_settings(config.loaded_app))
        _LIMITS[config] = limits
    return limits


def _served_settings(app: Any) -> Settings:
    """The settings of the McpApp under uvicorn's middleware wrappers, else the environment's."""
    for _ in range(16):
        own = getattr(app, "settings", None)
        if isinstance(own, Settings):
            return own
        app = getattr(app, "app", None)
        if app is None:
            break
    return Settings.from_env()


# uvicorn's method the hot path extends, called as a plain function (cheaper than super()).
_uvicorn_on_headers_complete = HttpToolsProtocol.on_headers_complete


class _Refused(Exception):
    """Raised inside a parser callback to stop parsing; the status is on the protocol."""


class _Discard:
    """The parser of a refused connection: what still arrives is dropped."""

    def feed_data(self, data: bytes) -> None:
        pass


_DISCARD = _Discard()


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with header caps, read deadlines and a connection bound.

    Where a request stands is read off uvicorn's own state after each read: uvicorn starts a
    new ``scope`` when a request's first byte is parsed and a new ``cycle`` (holding that scope)
    when its head is complete; the cycle's ``more_body`` turns false at the body's end.
    """

    # Slots, not instance attributes: uvicorn's protocol already keeps 28 in its instance dict,
    # and past 30 keys CPython stops sharing the keys, which slows every attribute access in
    # uvicorn's own code (by about 1% of a request's instructions).
    __slots__ = ("_body_timeout", "_body_timer", "_head", "_header_timeout", "_header_timer", "_linger_timer",
                 "_max_connections", "_max_head", "_max_headers", "_read", "_refusal", "_scope_seen", "_watch")

    def __init__(self, config: Any, server_state: Any, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        limits = _limits_for(config)
        self._max_head = limits.max_header_bytes
        self._max_headers = limits.max_headers
        self._header_timeout = limits.header_timeout
        self._body_timeout = limits.body_timeout
        self._max_connections = limits.max_connections
        # Bytes of an incomplete head counted so far, _LINGER once refused, _DETACHED once
        # upgraded. A read in which a new request starts is not counted (where in it the
        # request starts is not known): the cap may be passed by at most one read.
        self._head = 0
        self._read = 0  # length of the read being parsed
        self._refusal = 0
        self._scope_seen: Any = None  # the scope of the last head found incomplete after a read
        self._watch = True  # false: a head is complete, no deadline runs and no head is being counted
        self._header_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._linger_timer: asyncio.TimerHandle | None = None

    # -- connection ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self._max_connections:
            self.transport = transport
            _log.debug("refused a connection: %d open", len(self.connections))
            self._refuse(503, b"too many connections\n", b"retry-after: 1\r\n")
            return
        super().connection_made(transport)
        self._header_timer = self.loop.call_later(self._header_timeout, self._header_expired)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def _cancel_timers(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None

    # -- reading ---------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        # uvicorn's data_received (keep-alive timer off, feed the parser, answer its errors),
        # written out rather than called: a request's instructions are counted here.
        keep_alive = self.timeout_keep_alive_task
        if keep_alive is not None:
            keep_alive.cancel()
            self.timeout_keep_alive_task = None
        self._read = len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError:
            if not self._refusal:
                self.logger.warning("Invalid HTTP request received.")
            self.send_400_response("Invalid HTTP request received.")
            return
        # The common read: whole requests, nothing pending (_watch is true until a first head
        # is complete, so there is a cycle).
        if not self._watch:
            cycle = self.cycle
            if not cycle.more_body and cycle.scope is self.scope:
                return
        self._after_read(len(data))

    def _after_read(self, size: int) -> None:
        head = self._head
        if head < 0 or self.transport.is_closing():  # refused, upgraded or closed while parsing
            return
        cycle = self.cycle
        if cycle is not None and cycle.scope is self.scope:  # the last request's head is complete
            self._head = 0
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            if cycle.more_body:
                if self._body_timer is None:
                    self._body_timer = self.loop.call_later(self._body_timeout, self._body_expired)
            elif self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None
        else:
            if self.scope is self._scope_seen:  # the same head goes on: the whole read is head
                head += size
                if head > self._max_head:
                    self._refuse_head(431)
                    return
                self._head = head
            else:  # a request started in this read, after any earlier one's body ended
                if self._scope_seen is not None and self._header_timer is not None:  # the first keeps its deadline
                    self._header_timer.cancel()
                    self._header_timer = None
                self._scope_seen = self.scope
                self._head = 0
                if self._body_timer is not None:
                    self._body_timer.cancel()
                    self._body_timer = None
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(self._header_timeout, self._header_expired)
        self._watch = self._header_timer is not None or self._body_timer is not None or self._head != 0

    def on_headers_complete(self) -> None:
        if len(self.headers) > self._max_headers or self._head + self._read > self._max_head:
            self._check_head()
        _uvicorn_on_headers_complete(self)

    def _check_head(self) -> None:
        size = len(self.url) + sum(len(name) + len(value) + _HEADER_OVERHEAD for name, value in self.headers)
        if len(self.headers) > self._max_headers or size > self._max_head:
            self._refusal = 431
            raise _Refused

    def send_400_response(self, msg: str) -> None:
        # uvicorn's answer to a parser error, which a parser callback's refusal also raises.
        if self._refusal:
            self._refuse_head(self._refusal)
        else:
            super().send_400_response(msg)

    def handle_websocket_upgrade(self) -> None:
        self._cancel_timers()
        self._head = _DETACHED
        super().handle_websocket_upgrade()

    # -- deadlines -------------------------------------------------------------------------

    def _header_expired(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self._head < 0:
            return
        if self.flow.read_paused:  # the server holds the bytes back, not the client
            self._header_timer = self.loop.call_later(self._header_timeout, self._header_expired)
            return
        if self.scope is None:  # connected, and never sent a byte
            self.transport.close()
        else:
            self._refuse_head(408)

    def _body_expired(self) -> None:
        self._body_timer = None
        if self.transport.is_closing() or self._head < 0:
            return
        if self.flow.read_paused:
            self._body_timer = self.loop.call_later(self._body_timeout, self._body_expired)
            return
        cycle = self.cycle
        if not cycle.response_started and not self.pipeline:
            # The app may be waiting in receive(): it sees http.disconnect, and whatever it
            # sends afterwards is dropped (uvicorn's send() ignores a disconnected cycle).
            cycle.disconnected = True
            cycle.message_event.set()
            self._refuse(408, b"request body not received in time\n")
        else:
            self.transport.close()

    # -- refusals --------------------------------------------------------------------------

    def _refuse_head(self, status: int) -> None:
        """Answer ``status`` to a request whose head is refused, then close; when an earlier
        request on this connection is still being answered, close without a word (an answer
        now would be taken for that request's)."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            reason = b"request header fields too large\n" if status == 431 else b"request header not received in time\n"
            self._refuse(status, reason)
        else:
            hit_ceiling("header_size" if status == 431 else "header_timeout")
            self._head = _LINGER
            self.parser = _DISCARD  # type: ignore[assignment]
            self._cancel_timers()
            self.transport.close()

    def _refuse(self, status: int, body: bytes, extra: bytes = b"") -> None:
        """Answer ``status`` with ``Connection: close``, end the sending side, and read and drop
        whatever else arrives for :data:`LINGER_SECONDS` (or until the client closes)."""
        self._head = _LINGER
        self.parser = _DISCARD  # type: ignore[assignment]
        self._cancel_timers()
        hit_ceiling(_CEILINGS.get(body, str(status)))
        transport = self.transport
        parts = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            parts += [name, b": ", value, b"\r\n"]
        parts += [b"content-type: text/plain; charset=utf-8\r\ncontent-length: ", str(len(body)).encode(),
                  b"\r\nconnection: close\r\n", extra, b"\r\n", body]
        transport.write(b"".join(parts))
        if not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        if self.flow is not None:
            self.flow.resume_reading()
        self._linger_timer = self.loop.call_later(LINGER_SECONDS, transport.close)
