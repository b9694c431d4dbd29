"""A proxied MCP server over streamable HTTP, as the proxy reaches it.

The backend's era is found once (``server/discover``, else the 2025 ``initialize``). A
2026-07-28 backend needs no handshake: every request carries its envelope. A 2025 backend gets
one session per (caller identity, backend), whose id lives in the app's store (Redis when the
stores are), so every instance reuses it; a session the backend no longer knows (HTTP 404) is
re-established once, by whichever instance sees it first, and the request is sent again.
Messages the backend sends while it answers (progress, logs, its questions) go to ``relay``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx

from .. import _json
from ..client.sse import header_value, parse_sse
from ..credentials import HeaderAuth, _Strip
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.versions import (
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
    Era,
)
from .h1 import ExchangeError, H1Pool, HttpxExchange, Response
from .messages import caller_key, capabilities_for, reply_of, result_of, wants_tasks
from .sessions import SessionTable

if TYPE_CHECKING:
    from ..context import Inbound

__all__ = ["CONNECTION_META", "BackendUnavailable", "HttpBackend", "Relay"]

log = logging.getLogger("mcpcore.compose")

CONNECTION_META = frozenset({META_PROTOCOL_VERSION, META_CLIENT_INFO, META_CLIENT_CAPABILITIES, META_LOG_LEVEL})
"""``_meta`` keys that belong to a connection, never copied from the caller's request to the backend."""
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "tasks/get": "taskId",
          "tasks/update": "taskId", "tasks/cancel": "taskId"}

Relay = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Gets each message the backend sends during a request; answers its requests (a result)."""
Auth = Callable[["Inbound | None"], Awaitable[httpx.Auth | None]]
"""The credential of a request made for a caller (``None``: the proxy's own requests)."""
_BASE = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


class BackendUnavailable(Exception):
    """The backend did not answer (refused, reset, timed out, or a 5xx)."""


class _SessionLost(Exception):
    pass


def _ignore(msg: dict[str, Any]) -> Awaitable[dict[str, Any] | None]:
    fut: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
    fut.set_result(None)
    return fut


class HttpBackend:
    """One backend URL: its era, its 2025 sessions, and requests to it."""

    def __init__(self, url: str, *, name: str, table: SessionTable, auth: Auth, era: str = "auto",
                 timeout: float = 60.0, client_info: Mapping[str, Any] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url = url
        self.name = name
        self.table = table
        self._auth = auth
        self.era = era if era in ("modern", "legacy") else None
        self.mirrors = False
        self.discovered: dict[str, Any] = {}
        """The backend's ``server/discover`` answer (empty for a 2025-only backend)."""
        """The backend serves both eras: each caller's requests go in the caller's own era."""
        self.timeout = timeout
        self.client_info = dict(client_info or {"name": "mcpcore-proxy", "version": "1.0"})
        self._transport = transport
        self.http: httpx.AsyncClient | None = None
        self.h1: H1Pool | None = None
        """The backend's kept-alive connections (``None`` with a given ``transport``: all goes through httpx)."""
        self._httpx: HttpxExchange | None = None
        self.initializes = 0
        """How many 2025 sessions this instance opened on the backend."""
        self._ids = itertools.count(1)
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.listener_key = "listener:" + secrets.token_hex(8)
        """This instance's own session for its notification stream (a backend allows one GET stream per session)."""

    async def start(self) -> None:
        if self.http is None:  # for credentials that are auth flows, and a given transport
            self.http = httpx.AsyncClient(transport=self._transport, timeout=httpx.Timeout(self.timeout, connect=5.0))
            self._httpx = HttpxExchange(self.url, self.http)
            if self._transport is None:
                self.h1 = H1Pool(self.url)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        mine = await self.table.get(self.listener_key) if self.era == "legacy" else None
        if mine is not None and self.http is not None:  # this instance's stream session ends with it
            with contextlib.suppress(ExchangeError, McpError, TimeoutError):
                async with asyncio.timeout(5.0):
                    await (await self._open("DELETE", self._base(mine), None, None)).aclose()
            await self.table.forget(self.listener_key, mine)
        if self.h1 is not None:
            await self.h1.aclose()
            self.h1 = None
        if self.http is not None:
            await self.http.aclose()
            self.http = None
            self._httpx = None

    # -- the era ----------------------------------------------------------------------------------

    async def era_of(self, req: Inbound | None = None) -> str:
        """``"modern"`` or ``"legacy"``, found once with ``server/discover``: a backend serving both
        is spoken to in the caller's era (so its answers are what the caller expects), the proxy's
        own requests in 2026-07-28."""
        if self.era is None:
            try:
                found = await self._post("server/discover", self._envelope({}, None), None, None, _ignore)
                self.discovered = found
                versions = found.get("supportedVersions") or []
                self.era = "modern" if MODERN_VERSIONS[0] in versions else "legacy"
                self.mirrors = self.era == "modern" and any(v in LEGACY_VERSIONS for v in versions)
            except McpError:
                self.era = "legacy"
        if self.mirrors and req is not None:
            return "legacy" if req.era is Era.LEGACY else "modern"
        return self.era

    def _envelope(self, params: Mapping[str, Any], req: Inbound | None, method: str = "") -> dict[str, Any]:
        out = dict(params)
        meta = {k: v for k, v in (out.get("_meta") or {}).items() if k not in CONNECTION_META}
        meta[META_PROTOCOL_VERSION] = MODERN_VERSIONS[0]
        meta[META_CLIENT_INFO] = self.client_info
        meta[META_CLIENT_CAPABILITIES] = capabilities_for(req, wants_tasks(method, params, req))
        if req is not None:
            meta[META_LOG_LEVEL] = "debug"  # every level: the proxy filters per caller
        out["_meta"] = meta
        return out

    # -- requests ---------------------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any], req: Inbound | None,
                      relay: Relay = _ignore) -> dict[str, Any]:
        """``method`` on the backend for the caller of ``req`` (``None``: the proxy itself)."""
        if await self.era_of(req) == "modern":
            return await self._post(method, self._envelope(params, req, method), None, req, relay)
        sent = dict(params)
        if isinstance(sent.get("_meta"), dict):
            sent["_meta"] = {k: v for k, v in sent["_meta"].items() if k not in CONNECTION_META}
        key = caller_key(req)
        session = await self._session(key, req)
        try:
            return await self._post(method, sent, session, req, relay)
        except _SessionLost:
            session = await self._renew(key, session, req)
            try:
                return await self._post(method, sent, session, req, relay)
            except _SessionLost:
                raise BackendUnavailable(f"{self.name}: the backend lost a session it had just opened") from None

    async def notify(self, method: str, params: Mapping[str, Any], req: Inbound | None) -> None:
        """Send a notification (such as ``notifications/cancelled``) for the caller of ``req``."""
        session = None
        if await self.era_of(req) == "legacy":
            session = await self.table.get(caller_key(req))
        await self._send({"jsonrpc": "2.0", "method": method, "params": dict(params)}, session, req)

    async def _session(self, key: str, req: Inbound | None) -> tuple[str, str]:
        found = await self.table.get(key)
        if found is not None:
            return found
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            found = await self.table.get(key)
            if found is not None:
                return found
            async with self.table.opening(key) as mine:
                if not mine:  # another instance is opening it: use what it stores
                    found = await self.table.wait(key)
                    if found is not None:
                        return found
                session = await self._initialize(req)
                await self.table.put(key, session)
                return session

    async def _renew(self, key: str, lost: tuple[str, str], req: Inbound | None) -> tuple[str, str]:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            found = await self.table.get(key)
            if found is not None and found != lost:
                return found  # another caller (or instance) already renewed it
            await self.table.forget(key, lost)
        return await self._session(key, req)

    async def _initialize(self, req: Inbound | None) -> tuple[str, str]:
        info = self.client_info if req is not None else {**self.client_info, "title": "the proxy's own requests"}
        body = {"jsonrpc": "2.0", "id": f"init-{next(self._ids)}", "method": "initialize",
                "params": {"protocolVersion": LATEST_LEGACY, "capabilities": capabilities_for(req),
                           "clientInfo": info}}
        try:
            async with asyncio.timeout(self.timeout):
                resp = await self._open("POST", self._base(None), _json.dumps(body), req)
                text = (await resp.read()).decode("utf-8", "replace")
        except (ExchangeError, TimeoutError) as exc:
            raise BackendUnavailable(f"{self.name}: {exc or type(exc).__name__}") from exc
        if resp.status >= 500:
            raise BackendUnavailable(f"{self.name}: HTTP {resp.status}")
        reply = reply_of(resp.status, resp.headers.get("content-type", ""), text, body["id"])
        result = result_of(reply)
        version = result.get("protocolVersion")
        version = version if version in LEGACY_VERSIONS else LATEST_LEGACY
        sid = resp.headers.get("mcp-session-id") or ""
        self.initializes += 1
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"}, (sid, version), req)
        if "logging" in (result.get("capabilities") or {}):  # every level: the proxy filters per caller
            await self._send({"jsonrpc": "2.0", "id": f"level-{next(self._ids)}", "method": "logging/setLevel",
                              "params": {"level": "debug"}}, (sid, version), req)
        return sid, version

    async def _open(self, method: str, headers: dict[str, str], body: bytes | None,
                    req: Inbound | None) -> Response:
        """Send one request to the backend with the credential for ``req``'s caller: a plain header
        (or none) over :attr:`h1`, an auth flow through httpx."""
        if self._httpx is None:
            raise BackendUnavailable(f"{self.name}: the proxy is not started")
        auth = await self._auth(req)
        if self.h1 is not None:
            if auth is None or isinstance(auth, _Strip):
                return await self.h1.request(method, headers, body)
            if isinstance(auth, HeaderAuth):
                name, value = auth.header()
                return await self.h1.request(method, {**headers, name: value}, body)
        return await self._httpx.request(method, headers, body, auth if auth is not None else httpx.USE_CLIENT_DEFAULT)

    def _base(self, session: tuple[str, str] | None) -> dict[str, str]:
        h = _BASE.copy()
        if session is not None:
            if session[0]:
                h["mcp-session-id"] = session[0]
            h["mcp-protocol-version"] = session[1]
        return h

    async def _send(self, msg: dict[str, Any], session: tuple[str, str] | None, req: Inbound | None) -> None:
        h = self._base(session)
        if session is None:
            h["mcp-protocol-version"] = MODERN_VERSIONS[0]
        with contextlib.suppress(ExchangeError, McpError, TimeoutError):
            async with asyncio.timeout(self.timeout):
                await (await self._open("POST", h, _json.dumps(msg), req)).read()

    async def _post(self, method: str, params: dict[str, Any], session: tuple[str, str] | None,
                    req: Inbound | None, relay: Relay) -> dict[str, Any]:
        rid = next(self._ids)
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        h = self._base(session)
        if session is None:
            h["mcp-protocol-version"] = MODERN_VERSIONS[0]
            h["mcp-method"] = method
            named = params.get(_NAMED.get(method, ""))
            if isinstance(named, str):
                h["mcp-name"] = header_value(named)
        try:
            async with asyncio.timeout(self.timeout) as limit:
                resp = await self._open("POST", h, _json.dumps(body), req)
                try:
                    if resp.status == 404 and session is not None and session[0]:
                        raise _SessionLost
                    if resp.status >= 500:
                        raise BackendUnavailable(f"{self.name}: HTTP {resp.status}")
                    kind = resp.headers.get("content-type", "")
                    if kind.startswith("text/event-stream"):
                        reply = await self._read_stream(resp, rid, session, req, relay, limit)
                    else:
                        reply = reply_of(resp.status, kind, (await resp.read()).decode("utf-8", "replace"), rid)
                finally:
                    await resp.aclose()
        except (ExchangeError, TimeoutError) as exc:
            raise BackendUnavailable(f"{self.name}: {exc or type(exc).__name__}") from exc
        except asyncio.CancelledError:  # the caller went away: tell the backend, in the background
            self._spawn(self._send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": rid, "reason": "the caller cancelled"}}, session, req))
            raise
        return result_of(reply)

    async def _read_stream(self, resp: Response, rid: int, session: tuple[str, str] | None,
                           req: Inbound | None, relay: Relay, limit: asyncio.Timeout) -> dict[str, Any]:
        """The answer to ``rid`` from an SSE stream; ``limit`` runs between the backend's messages
        (a long call that reports progress is not cut), and not while the caller is asked."""
        loop = asyncio.get_running_loop()
        async for ev in parse_sse(resp.lines()):
            limit.reschedule(loop.time() + self.timeout)
            if not ev.get("data"):
                continue
            msg = _json.loads(ev["data"])
            if not isinstance(msg, dict):
                continue
            if "method" not in msg:
                if msg.get("id") == rid:
                    return msg
                continue
            if "id" not in msg:
                await relay(msg)
                continue
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
            limit.reschedule(None)
            try:
                answer["result"] = await relay(msg) or {}
            except McpError as exc:
                answer["error"] = {"code": exc.code, "message": exc.message, **({"data": exc.data} if exc.data else {})}
            await self._send(answer, session, req)
            limit.reschedule(loop.time() + self.timeout)
        raise BackendUnavailable(f"{self.name}: the stream ended without an answer")

    @contextlib.asynccontextmanager
    async def events(self, wanted: dict[str, Any]) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """The proxy's own stream of the backend's notifications: ``subscriptions/listen`` with
        ``wanted`` (2026-07-28), or the GET stream of the proxy's own session after subscribing
        to ``wanted["resourceSubscriptions"]`` (2025)."""
        session = None
        if await self.era_of() == "modern":
            params = self._envelope({"notifications": wanted}, None)
            h = self._base(None)
            h.update({"mcp-protocol-version": MODERN_VERSIONS[0], "mcp-method": "subscriptions/listen"})
            body = {"jsonrpc": "2.0", "id": f"listen-{next(self._ids)}", "method": "subscriptions/listen",
                    "params": params}
            method, content = "POST", _json.dumps(body)
        else:
            session = await self._session(self.listener_key, None)
            for uri in wanted.get("resourceSubscriptions") or ():
                with contextlib.suppress(McpError, _SessionLost):
                    await self._post("resources/subscribe", {"uri": uri}, session, None, _ignore)
            h = self._base(session)
            h["accept"] = "text/event-stream"
            h.pop("content-type", None)
            method, content = "GET", None
        try:
            async with asyncio.timeout(self.timeout):
                resp = await self._open(method, h, content, None)
        except (ExchangeError, TimeoutError) as exc:
            raise BackendUnavailable(f"{self.name}: {exc or type(exc).__name__}") from exc
        try:
            if resp.status == 404 and session is not None:
                await self.table.forget(self.listener_key, session)
                raise RuntimeError(f"{self.name}: the backend forgot the proxy's session; opening another")
            if resp.status >= 500:
                raise BackendUnavailable(f"{self.name}: HTTP {resp.status}")
            if resp.status >= 400 or not resp.headers.get("content-type", "").startswith("text/event-stream"):
                raise McpError(JsonRpcErrorCode.MethodNotFound,
                               f"{self.name}: the notification stream was refused (HTTP {resp.status})")

            async def messages() -> AsyncIterator[dict[str, Any]]:
                async for ev in parse_sse(resp.lines()):
                    if ev.get("data"):
                        msg = _json.loads(ev["data"])
                        if isinstance(msg, dict):
                            yield msg

            yield messages()
        except ExchangeError as exc:
            raise BackendUnavailable(f"{self.name}: {type(exc).__name__}") from exc
        finally:
            await resp.aclose()

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
