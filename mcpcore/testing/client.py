"""An in-process MCP client for tests, speaking either protocol era over streamable HTTP."""

from __future__ import annotations

import asyncio
import base64
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx

from .. import _json
from ..errors import JsonRpcErrorCode, McpError, error_object
from ..protocol.versions import (
    LATEST_LEGACY,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
)
from .asgi import StreamingASGITransport

__all__ = ["McpTestClient", "parse_sse"]

_NAMED = frozenset({"tools/call", "prompts/get", "resources/read", "tasks/get", "tasks/update", "tasks/cancel"})

ClientHandler = Callable[[dict[str, Any] | None], Awaitable[dict[str, Any]] | dict[str, Any]]


async def parse_sse(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """Yield ``{"event", "id", "data", "retry"}`` for each SSE event (comments skipped)."""
    ev: dict[str, Any] = {}
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data or ev:
                ev["data"] = "\n".join(data)
                yield ev
            ev, data = {}, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field in ("event", "id", "retry"):
            ev[field] = value
    if data:
        ev["data"] = "\n".join(data)
        yield ev


def header_value(text: str) -> str:
    """``text`` as an ``Mcp-Name``/``Mcp-Param-*`` header carries it: as is when it is printable
    ASCII without surrounding spaces, else ``=?base64?...?=``."""
    if text.isascii() and text.isprintable() and text == text.strip() and not text.startswith("=?"):
        return text
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


class McpTestClient:
    """Drive an app as a real client would, in process or over a real URL.

    Example::

        async with McpTestClient(app) as c:             # 2025-era session (initialize first)
            result = await c.call_tool("search", {"query": "red"})
        async with McpTestClient(app, era="modern") as c:  # 2026-07-28, per-request envelope
            ...

    Notifications received during requests are kept in ``messages``. Requests the server sends
    to the client (2025 era) are answered by ``handlers[method](params)``.

    An app that is not running yet is started on entry and shut down on exit (its lifespan, as a
    server would run it); start it yourself (``await app.startup()``) to keep it, and its
    in-memory stores, across several clients.
    """

    def __init__(
        self,
        app: Any = None,
        *,
        url: str | None = None,
        era: str = "legacy",
        protocol_version: str | None = None,
        capabilities: Mapping[str, Any] | None = None,
        client_info: Mapping[str, Any] | None = None,
        handlers: Mapping[str, ClientHandler] | None = None,
        headers: Mapping[str, str] | None = None,
        log_level: str | None = None,
        initialize: bool = True,
        path: str = "/mcp",
        timeout: float = 10.0,
    ) -> None:
        if app is None and url is None:
            raise ValueError("pass an app (served in process) or a url")
        self.app = app
        self.era = era
        self.protocol_version = protocol_version or (MODERN_VERSIONS[0] if era == "modern" else LATEST_LEGACY)
        self.capabilities = dict(capabilities or {})
        self.client_info = dict(client_info or {"name": "mcpcore-test", "version": "1.0"})
        self.handlers = dict(handlers or {})
        self.extra_headers = dict(headers or {})
        self.log_level = log_level
        self._initialize = initialize
        self.url = url or f"http://127.0.0.1:8000{path}"
        self.timeout = timeout
        self.session_id: str | None = None
        self.server_info: dict[str, Any] | None = None
        self.init_result: dict[str, Any] | None = None
        self.messages: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._owns_app = False
        self.http: httpx.AsyncClient

    async def __aenter__(self) -> McpTestClient:
        if self.app is not None:
            if hasattr(self.app, "startup"):
                self._owns_app = not getattr(self.app, "_started", False)
                await self.app.startup()
            transport: httpx.AsyncBaseTransport = StreamingASGITransport(self.app)
        else:
            transport = httpx.AsyncHTTPTransport()
        self.http = httpx.AsyncClient(transport=transport, timeout=self.timeout)
        if self.era == "legacy" and self._initialize:
            await self.initialize()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()
        if self._owns_app:
            self._owns_app = False
            await self.app.shutdown()

    # -- headers and envelopes ------------------------------------------------------------------

    def headers(self, method: str | None = None, params: Mapping[str, Any] | None = None) -> dict[str, str]:
        h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.era == "modern":
            h["mcp-protocol-version"] = self.protocol_version
            if method:
                h["mcp-method"] = method
                field = "uri" if method == "resources/read" else "taskId" if method.startswith("tasks/") else "name"
                name = (params or {}).get(field)
                if method in _NAMED and isinstance(name, str):
                    h["mcp-name"] = header_value(name)
        else:
            if self.session_id:
                h["mcp-session-id"] = self.session_id
            if self.init_result is not None:
                h["mcp-protocol-version"] = self.init_result.get("protocolVersion", self.protocol_version)
        h.update(self.extra_headers)
        return h

    def envelope(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        out = dict(params or {})
        if self.era == "modern":
            meta = dict(out.get("_meta") or {})
            meta.setdefault(META_PROTOCOL_VERSION, self.protocol_version)
            meta.setdefault(META_CLIENT_CAPABILITIES, self.capabilities)
            meta.setdefault(META_CLIENT_INFO, self.client_info)
            if self.log_level:
                meta.setdefault(META_LOG_LEVEL, self.log_level)
            out["_meta"] = meta
        return out

    # -- raw access -----------------------------------------------------------------------------

    async def post(self, body: Any, headers: Mapping[str, str] | None = None) -> httpx.Response:
        """POST a raw body (dict/list are JSON-encoded) and return the buffered response."""
        content = body if isinstance(body, (bytes, str)) else _json.dumps(body)
        return await self.http.post(self.url, content=content, headers=dict(headers) if headers is not None
                                    else self.headers())

    async def initialize(self) -> dict[str, Any]:
        result, resp = await self._call("initialize", {
            "protocolVersion": self.protocol_version, "capabilities": self.capabilities,
            "clientInfo": self.client_info}, raw=True)
        self.session_id = resp.headers.get("mcp-session-id")
        self.init_result = result
        self.server_info = result.get("serverInfo")
        await self.notify("notifications/initialized")
        return result

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = dict(params)
        return await self.post(msg, self.headers())

    async def request(self, method: str, params: Mapping[str, Any] | None = None, *,
                      headers: Mapping[str, str] | None = None, request_id: Any = None) -> dict[str, Any]:
        """Send one request; returns its result or raises :class:`McpError`."""
        result, _ = await self._call(method, params, headers=headers, request_id=request_id)
        return result

    async def _call(self, method: str, params: Mapping[str, Any] | None, *, headers: Mapping[str, str] | None = None,
                    request_id: Any = None, raw: bool = False) -> tuple[dict[str, Any], httpx.Response]:
        rid = request_id if request_id is not None else next(self._ids)
        sent = self.envelope(params)
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": sent}
        h = self.headers(method, sent)
        if headers:
            h.update(headers)
        async with self.http.stream("POST", self.url, content=_json.dumps(body), headers=h) as resp:
            if resp.headers.get("content-type", "").startswith("text/event-stream"):
                reply = await self._read_stream(resp, rid)
            else:
                data = await resp.aread()
                if not data:
                    raise McpError(-32603, f"empty HTTP {resp.status_code} response")
                reply = _json.loads(data)
        if "error" in reply:
            e = reply["error"]
            err = McpError(e["code"], e.get("message"), e.get("data"))
            err.http_status = resp.status_code  # type: ignore[attr-defined]
            raise err
        return reply["result"], resp

    async def _read_stream(self, resp: httpx.Response, rid: Any) -> dict[str, Any]:
        async for ev in parse_sse(resp.aiter_lines()):
            if not ev.get("data"):
                continue
            msg = _json.loads(ev["data"])
            if "method" in msg and "id" in msg:
                asyncio.get_running_loop().create_task(self._answer(msg))
            elif "method" in msg:
                self.messages.append(msg)
            elif msg.get("id") == rid:
                return dict(msg)
        raise McpError(-32603, "the stream ended without a response")

    async def _answer(self, msg: dict[str, Any]) -> None:
        handler = self.handlers.get(msg["method"])
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        if handler is None:
            reply["error"] = error_object(JsonRpcErrorCode.MethodNotFound, f"no handler for {msg['method']}")
        else:
            try:
                out = handler(msg.get("params"))
                if asyncio.iscoroutine(out):
                    out = await out
                reply["result"] = out
            except McpError as exc:
                reply["error"] = error_object(exc.code, exc.message)
        await self.post(reply, self.headers())

    # -- conveniences ---------------------------------------------------------------------------

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                        progress_token: str | int | None = None, **params: Any) -> dict[str, Any]:
        p: dict[str, Any] = {"name": name, **params}
        if arguments is not None:
            p["arguments"] = dict(arguments)
        if progress_token is not None:
            p["_meta"] = {"progressToken": progress_token}
        return await self.request("tools/call", p)

    async def list_tools(self) -> list[dict[str, Any]]:
        return list((await self.request("tools/list"))["tools"])

    async def read_resource(self, uri: str) -> dict[str, Any]:
        return await self.request("resources/read", {"uri": uri})

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> dict[str, Any]:
        p: dict[str, Any] = {"name": name}
        if arguments is not None:
            p["arguments"] = dict(arguments)
        return await self.request("prompts/get", p)

    async def delete_session(self) -> httpx.Response:
        return await self.http.delete(self.url, headers=self.headers())

    async def open_stream(self, headers: Mapping[str, str] | None = None) -> tuple[httpx.Response,
                                                                                      AsyncIterator[dict[str, Any]]]:
        """Open the session's GET stream; returns the response and an iterator of its events.
        Close it with ``await response.aclose()``."""
        h = self.headers()
        h["accept"] = "text/event-stream"
        h.pop("content-type", None)
        if headers:
            h.update(headers)
        req = self.http.build_request("GET", self.url, headers=h)
        resp = await self.http.send(req, stream=True)
        return resp, parse_sse(resp.aiter_lines())
