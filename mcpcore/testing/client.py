"""``McpTestClient``: :class:`mcpcore.client.Client` set up for tests: one era chosen up front,
``input_required`` results handed back as they are, and the raw HTTP at hand."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from .. import _json
from ..client import Client, Handler, parse_sse
from ..client.sse import header_value

__all__ = ["McpTestClient", "header_value", "parse_sse"]

ClientHandler = Handler


class McpTestClient(Client):
    """Drive an app as a real client would, in process or over a real URL.

    Example::

        async with McpTestClient(app) as c:             # 2025-era session (initialize first)
            result = await c.call_tool("search", {"query": "red"})
        async with McpTestClient(app, era="modern") as c:  # 2026-07-28, per-request envelope
            ...

    Unlike :class:`~mcpcore.client.Client`, it declares only the ``capabilities`` it is given,
    never discovers (the era is chosen up front), and returns ``input_required`` results as
    they are, so a test sees every round. Notifications received during requests are kept in
    ``messages``. Requests the server sends to the client (2025 era) are answered by
    ``handlers[method](params)``.

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
        handlers: Mapping[str, Handler] | None = None,
        headers: Mapping[str, str] | None = None,
        log_level: str | None = None,
        initialize: bool = True,
        path: str = "/mcp",
        timeout: float = 10.0,
    ) -> None:
        if app is None and url is None:
            raise ValueError("pass an app (served in process) or a url")
        if era not in ("legacy", "modern"):
            raise ValueError(f"era is 'legacy' or 'modern', not {era!r}")
        self.messages: list[dict[str, Any]] = []
        super().__init__(app if app is not None else url, url=url, era=era, protocol_version=protocol_version,
                         capabilities=dict(capabilities or {}),
                         client_info=client_info or {"name": "mcpcore-test", "version": "1.0"},
                         handlers=handlers, headers=headers, log_level=log_level, timeout=timeout, path=path,
                         on_notification=self.messages.append)
        self.answers_input_required = False
        self.end_session = False  # a test may look at the session after the client is gone
        self._initialize = initialize

    async def __aenter__(self) -> McpTestClient:
        await self.open()
        if self.era == "legacy" and self._initialize:
            try:
                await self.initialize()
            except BaseException:
                await self.close()
                raise
        return self

    # -- raw access -----------------------------------------------------------------------------

    async def post(self, body: Any, headers: Mapping[str, str] | None = None) -> httpx.Response:
        """POST a raw body (dict/list are JSON-encoded) and return the buffered response."""
        content = body if isinstance(body, (bytes, str)) else _json.dumps(body)
        return await self.http.post(self.url, content=content, headers=dict(headers) if headers is not None
                                    else self.headers())

    async def list_tools(self) -> list[dict[str, Any]]:
        """The first page of ``tools/list`` (page with :meth:`request` and ``cursor``)."""
        return list((await self.request("tools/list"))["tools"])

    async def delete_session(self) -> httpx.Response:
        """DELETE the 2025 session."""
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
