"""The connection under :class:`~mcpcore.client.Client`: where it talks (a URL, an app in
process, a stdio command), which era it speaks, how a request goes out and its answer comes back,
and how the server's questions are answered."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import httpx

from ..errors import JsonRpcErrorCode, McpError, error_object
from ..protocol.methods import BY_NAME
from ..protocol.versions import (
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
    MODERN_VERSIONS,
)
from .asgi import StreamingASGITransport
from .channels import BearerAuth, HttpChannel, StdioChannel
from .oauth import OAuth
from .sse import header_value

__all__ = ["TASKS_EXTENSION", "Handler", "Session"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]] | dict[str, Any]]
"""Answers one kind of request from the server: gets its ``params``, returns its result."""

_CAPABILITY_OF = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


class Session:
    """A connection to one server, in one era (see :class:`~mcpcore.client.Client`)."""

    def __init__(
        self,
        target: Any = None,
        *,
        url: str | None = None,
        command: Sequence[str] | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        era: str = "auto",
        protocol_version: str | None = None,
        capabilities: Mapping[str, Any] | None = None,
        client_info: Mapping[str, Any] | None = None,
        handlers: Mapping[str, Handler] | None = None,
        on_elicit: Handler | None = None,
        on_sample: Handler | None = None,
        on_roots: Handler | None = None,
        on_log: Callable[[dict[str, Any]], Any] | None = None,
        on_notification: Callable[[dict[str, Any]], Any] | None = None,
        log_level: str | None = None,
        auth: str | httpx.Auth | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        max_rounds: int = 10,
        path: str = "/mcp",
    ) -> None:
        if era not in ("auto", "modern", "legacy"):
            raise ValueError(f"era must be 'auto', 'modern' or 'legacy', not {era!r}")
        app = None
        if isinstance(target, str) and target.startswith(("http://", "https://")):
            url = target
        elif isinstance(target, (list, tuple)):
            command = [str(part) for part in target]
        elif isinstance(target, str):
            raise ValueError(f"{target!r} is not a server: pass an http(s) URL, an app, or a command list "
                             "(['python', 'server.py'])")
        elif target is not None:
            app = target  # served in process, at ``url`` when given
        self.app = app
        if self.app is None and url is None and not command:
            raise ValueError("pass a URL, an app (served in process) or command=[...] (a stdio server)")
        if command and auth is not None:
            raise ValueError("auth= applies to HTTP; give a stdio server its credentials in env=")
        self.command = list(command) if command else None
        self.cwd = cwd
        self.env = dict(env) if env else None
        self.era = era
        self.protocol_version = protocol_version or (MODERN_VERSIONS[0] if era != "legacy" else LATEST_LEGACY)
        self.handlers: dict[str, Handler] = dict(handlers or {})
        for method, fn in (("elicitation/create", on_elicit), ("sampling/createMessage", on_sample),
                           ("roots/list", on_roots)):
            if fn is not None:
                self.handlers[method] = fn
        if capabilities is None:
            capabilities = {cap: {} for method, cap in _CAPABILITY_OF.items() if method in self.handlers}
        self.capabilities = dict(capabilities)
        self.client_info = dict(client_info or {"name": "mcpcore-client", "version": "1.0"})
        self.on_log = on_log
        self.on_notification = on_notification
        self.log_level = log_level
        self.auth = BearerAuth(auth) if isinstance(auth, str) else auth
        self.extra_headers = dict(headers or {})
        self.timeout = timeout
        self.max_rounds = max_rounds
        self.url = url or f"http://127.0.0.1:8000{path}"
        self.session_id: str | None = None
        self.server_info: dict[str, Any] | None = None
        self.init_result: dict[str, Any] | None = None
        self.answers_input_required = True
        self.end_session = True
        self._ids = itertools.count(1)
        self._owns_app = False
        self._channel: HttpChannel | StdioChannel | None = None
        self._progress: dict[Any, Callable[[float, float | None, str | None], Any]] = {}
        self._routes: dict[Any, asyncio.Queue[dict[str, Any] | None]] = {}
        self._background: set[asyncio.Task[Any]] = set()

    # -- opening and closing ----------------------------------------------------------------------

    async def open(self) -> None:
        """Start the app (in process) or the subprocess, and the HTTP client; no MCP yet."""
        if self.command is not None:
            channel = StdioChannel(self.command, self._on_message, cwd=self.cwd, env=self.env)
            await channel.open()
            self._channel = channel
            return
        if self.app is not None:
            if hasattr(self.app, "startup"):
                self._owns_app = not getattr(self.app, "started", False)
                await self.app.startup()
            transport: httpx.AsyncBaseTransport = StreamingASGITransport(self.app)
        else:
            transport = httpx.AsyncHTTPTransport()
        if isinstance(self.auth, OAuth):
            self.auth.server = self.auth.server or self.url
            if self.app is not None:
                self.auth.transport = transport
        http = httpx.AsyncClient(transport=transport, timeout=self.timeout, auth=self.auth)
        self._channel = HttpChannel(http, self._on_message)

    async def close(self) -> None:
        """End the connection (a 2025 HTTP session is deleted when ``end_session`` is set), stop
        what was started."""
        for task in list(self._background):
            task.cancel()
        if self.end_session and self.session_id and isinstance(self._channel, HttpChannel):
            with contextlib.suppress(httpx.HTTPError):
                await self._channel.http.delete(self.url, headers=self.headers())
            self.session_id = None
        if self._channel is not None:
            await self._channel.close()
        if self._owns_app and self.app is not None:
            self._owns_app = False
            await self.app.shutdown()

    @property
    def http(self) -> httpx.AsyncClient:
        """The HTTP client (HTTP connections only)."""
        if not isinstance(self._channel, HttpChannel):
            raise RuntimeError("this client speaks stdio (or is not open): there is no HTTP client")
        return self._channel.http

    @http.setter
    def http(self, client: httpx.AsyncClient) -> None:
        if isinstance(self._channel, StdioChannel):
            raise RuntimeError("this client speaks stdio: there is no HTTP client to replace")
        self._channel = HttpChannel(client, self._on_message)

    @property
    def modern(self) -> bool:
        """Whether requests go out in the 2026-07-28 era."""
        return self.era == "modern"

    # -- what each request carries ----------------------------------------------------------------

    def headers(self, method: str | None = None, params: Mapping[str, Any] | None = None) -> dict[str, str]:
        """The HTTP headers of a request (the era's, the session's, the extra ones)."""
        h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.modern:
            h["mcp-protocol-version"] = self.protocol_version
            if method:
                h["mcp-method"] = method
                m = BY_NAME.get(method)
                name = (params or {}).get(m.names_by) if m is not None and m.mirrored and m.names_by else None
                if isinstance(name, str):
                    h["mcp-name"] = header_value(name)
        else:
            if self.session_id:
                h["mcp-session-id"] = self.session_id
            if self.init_result is not None:
                h["mcp-protocol-version"] = self.init_result.get("protocolVersion", self.protocol_version)
        h.update(self.extra_headers)
        return h

    def envelope(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """``params`` with the 2026-07-28 envelope in ``_meta`` (modern era; as is otherwise)."""
        out = dict(params or {})
        if self.modern:
            meta = dict(out.get("_meta") or {})
            meta.setdefault(META_PROTOCOL_VERSION, self.protocol_version)
            meta.setdefault(META_CLIENT_CAPABILITIES, self.capabilities)
            meta.setdefault(META_CLIENT_INFO, self.client_info)
            if self.log_level:
                meta.setdefault(META_LOG_LEVEL, self.log_level)
            out["_meta"] = meta
        return out

    def _with_tasks(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` declaring the tasks extension (2026-07-28) on top of the capabilities."""
        if not self.modern:
            return params
        caps = dict(self.capabilities)
        caps["extensions"] = {**(caps.get("extensions") or {}), TASKS_EXTENSION: {}}
        return {**params, "_meta": {**(params.get("_meta") or {}), META_CLIENT_CAPABILITIES: caps}}

    # -- requests ---------------------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any] | None = None, *,
                      headers: Mapping[str, str] | None = None, request_id: Any = None) -> dict[str, Any]:
        """Send one request; returns its result or raises :class:`~mcpcore.McpError` (its
        ``code``, ``message`` and ``data``; ``http_status`` too over HTTP)."""
        result, _ = await self._call(method, params, headers=headers, request_id=request_id)
        return result

    async def _call(self, method: str, params: Mapping[str, Any] | None, *, headers: Mapping[str, str] | None = None,
                    request_id: Any = None, seconds: float | None = None) -> tuple[dict[str, Any], Any]:
        rid = request_id if request_id is not None else next(self._ids)
        sent = self.envelope(params)
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": sent}
        channel = self._open_channel()
        if isinstance(channel, StdioChannel):
            reply, resp = await channel.exchange(body, seconds or self.timeout), None
        else:
            h = self.headers(method, sent)
            if headers:
                h.update(headers)
            reply, resp = await channel.exchange(self.url, body, h)
        if "error" in reply:
            e = reply["error"] if isinstance(reply["error"], dict) else {}
            err = McpError(e.get("code", JsonRpcErrorCode.InternalError), e.get("message"), e.get("data"))
            err.http_status = resp.status_code if resp is not None else None  # type: ignore[attr-defined]
            raise err
        result = reply.get("result")
        return (result if isinstance(result, dict) else {}), resp

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Send a notification (over HTTP, returns the response)."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = dict(params)
        channel = self._open_channel()
        if isinstance(channel, StdioChannel):
            await channel.send(msg)
            return None
        return await channel.send(self.url, msg, self.headers())

    def _open_channel(self) -> HttpChannel | StdioChannel:
        if self._channel is None:
            raise RuntimeError("the client is not open: use `async with Client(...) as client:`")
        return self._channel

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The handler's answer to a question of the server (``ping`` answers itself)."""
        handler = self.handlers.get(method)
        if handler is None:
            if method == "ping":
                return {}
            raise McpError(JsonRpcErrorCode.MethodNotFound, f"no handler for {method}")
        out = handler(params)
        if inspect.isawaitable(out):
            out = await out
        return dict(out)

    # -- messages the server sends ----------------------------------------------------------------

    def _on_message(self, msg: dict[str, Any]) -> None:
        if "id" in msg:
            task = asyncio.get_running_loop().create_task(self._answer_request(msg))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return
        raw = msg.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        sub = (params.get("_meta") or {}).get(META_SUBSCRIPTION_ID) if isinstance(params.get("_meta"), dict) \
            else None
        route = self._routes.get(sub) if sub is not None else self._routes.get(None)
        if route is not None and msg.get("method") not in ("notifications/progress", "notifications/message"):
            route.put_nowait(msg)
        if msg.get("method") == "notifications/progress":
            callback = self._progress.get(params.get("progressToken"))
            if callback is not None:
                self._spawn(callback(params.get("progress", 0), params.get("total"), params.get("message")))
        elif msg.get("method") == "notifications/message" and self.on_log is not None:
            self._spawn(self.on_log(params))
        if self.on_notification is not None:
            self._spawn(self.on_notification(msg))

    def _spawn(self, out: Any) -> None:
        if inspect.isawaitable(out):
            task = asyncio.ensure_future(out)
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _answer_request(self, msg: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        try:
            reply["result"] = await self.answer(msg["method"], msg.get("params") or {})
        except McpError as exc:
            reply["error"] = error_object(exc.code, exc.message, exc.data)
        except Exception as exc:  # a handler's bug answers the server instead of leaving it waiting
            reply["error"] = error_object(JsonRpcErrorCode.InternalError, f"the client's handler failed: {exc}")
        channel = self._open_channel()
        if isinstance(channel, StdioChannel):
            await channel.send(reply)
        else:
            await channel.send(self.url, reply, self.headers())

    # -- the era ----------------------------------------------------------------------------------

    async def initialize(self) -> dict[str, Any]:
        """The 2025 handshake: ``initialize`` (a session over HTTP), then ``notifications/initialized``."""
        self.era = "legacy"
        result, resp = await self._call("initialize", {
            "protocolVersion": self.protocol_version, "capabilities": self.capabilities,
            "clientInfo": self.client_info})
        if resp is not None:
            self.session_id = resp.headers.get("mcp-session-id")
        self.init_result = result
        self.server_info = result.get("serverInfo")
        await self.notify("notifications/initialized")
        return result

    async def discover(self, *, seconds: float | None = None) -> dict[str, Any]:
        """``server/discover`` (2026-07-28): the revisions, capabilities and identity."""
        saved, self.era = self.era, "modern"
        try:
            result, _ = await self._call("server/discover", {}, seconds=seconds)
        except BaseException:
            self.era = saved
            raise
        self.init_result = result
        self.server_info = (result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
        return result

    async def connect(self) -> None:
        """Choose the era (``auto``: ``server/discover``, else the 2025 handshake) and set up."""
        if self.era == "legacy":
            await self.initialize()
        elif self.era == "modern":
            await self.discover()
        else:
            wanted, self.protocol_version = self.protocol_version, MODERN_VERSIONS[0]
            try:
                found = await self.discover(seconds=min(self.timeout, 10.0))
                modern = MODERN_VERSIONS[0] in (found.get("supportedVersions") or [])
            except McpError as exc:
                if getattr(exc, "http_status", None) in (401, 403):
                    raise
                modern = False
            if not modern:
                self.era = "legacy"
                self.protocol_version = wanted if wanted in LEGACY_VERSIONS else LATEST_LEGACY
                await self.initialize()
        if self.era == "legacy" and self.log_level:
            await self.request("logging/setLevel", {"level": self.log_level})

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """What the server declared (``server/discover`` or ``initialize``)."""
        caps = (self.init_result or {}).get("capabilities")
        return dict(caps) if isinstance(caps, dict) else {}

    @property
    def instructions(self) -> str | None:
        """The server's instructions, if it gave any."""
        text = (self.init_result or {}).get("instructions")
        return text if isinstance(text, str) else None
