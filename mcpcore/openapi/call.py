"""Arguments to an HTTP request, sent through httpx, read within bounds.

A remote API is called through the ``httpx.AsyncClient`` given; an ASGI app (the FastAPI app
this server is mounted in) through :class:`AppTransport`, in process: no socket, no network hop.
Unlike httpx's own ASGI transport it streams the body, so a streaming route or a large download
is read only as far as the bounds allow and then left (the app's task is cancelled)."""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx

from .. import _json
from ..errors import JsonRpcErrorCode, McpError
from .params import Arg, RequestPlan

__all__ = ["AppTransport", "build_request", "read_bounded"]


class _Body(httpx.AsyncByteStream):
    def __init__(self, queue: asyncio.Queue[dict[str, Any] | BaseException | None], task: asyncio.Task[None]) -> None:
        self.queue = queue
        self.task = task

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            message = await self.queue.get()
            if message is None:
                return
            if isinstance(message, BaseException):
                raise message
            if message.get("type") == "http.response.body":
                chunk = message.get("body", b"")
                if chunk:
                    yield chunk
                if not message.get("more_body", False):
                    return

    async def aclose(self) -> None:
        if not self.task.done():
            self.task.cancel()
            try:
                await self.task
            except BaseException:  # the app's own end, after the reader left
                pass


class AppTransport(httpx.AsyncBaseTransport):
    """An ASGI app as an httpx transport, in process, streaming its responses.

    Args:
        app: the ASGI app.
        client: the client address the app sees.
    """

    def __init__(self, app: Any, client: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.app = app
        self.client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = request.content if isinstance(request.stream, httpx.ByteStream) else await request.aread()
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw], "scheme": request.url.scheme,
            "path": request.url.path, "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query, "server": (request.url.host, request.url.port or 80),
            "client": self.client, "root_path": "", "extensions": {}, "state": {},
        }
        queue: asyncio.Queue[dict[str, Any] | BaseException | None] = asyncio.Queue(maxsize=64)
        started: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        sent_body = False
        finished = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await finished.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                if not started.done():
                    started.set_result(message)
                return
            await queue.put(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                finished.set()

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            except Exception as exc:
                if not started.done():
                    started.set_exception(exc)
                else:
                    await queue.put(exc)
                return
            except BaseException:  # cancelled: the reader has left
                if not started.done():
                    started.set_exception(RuntimeError("the app was cancelled before it answered"))
                raise
            finally:
                finished.set()
            if not started.done():
                started.set_exception(RuntimeError("the app ended without a response"))
            await queue.put(None)

        task = asyncio.get_running_loop().create_task(run())
        try:
            start = await started
        except BaseException:
            task.cancel()
            raise
        headers = [(bytes(k), bytes(v)) for k, v in start.get("headers", [])]
        return httpx.Response(start["status"], headers=headers, stream=_Body(queue, task), request=request)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return _json.dumps_str(value)
    return str(value)


def _query(arg: Arg, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, list):
        if arg.explode:
            out.extend((arg.wire, _text(v)) for v in value)
        else:
            sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(arg.style, ",")
            out.append((arg.wire, sep.join(_text(v) for v in value)))
    elif isinstance(value, dict):
        if arg.style == "deepObject":
            out.extend((f"{arg.wire}[{k}]", _text(v)) for k, v in value.items())
        elif arg.explode:
            out.extend((str(k), _text(v)) for k, v in value.items())
        else:
            out.append((arg.wire, ",".join(f"{k},{_text(v)}" for k, v in value.items())))
    else:
        out.append((arg.wire, _text(value)))


def _bytes(arg: Arg, value: Any) -> bytes:
    if not arg.binary:
        return _text(value).encode()
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise McpError(JsonRpcErrorCode.InvalidParams, f"Invalid arguments: {arg.name}: not base64",
                       {"reason": "invalid_arguments", "issues": [{"path": arg.name, "message": "not base64"}],
                        "recovery": {"hint": f"Send {arg.name} as base64 text."}}) from None


def build_request(client: httpx.AsyncClient, plan: RequestPlan, base: str, arguments: dict[str, Any]) -> httpx.Request:
    """The request for ``arguments`` (validated against the tool's input schema)."""
    path = plan.path
    query: list[tuple[str, str]] = []
    headers: dict[str, str] = {}
    cookies: list[str] = []
    fields: dict[str, Any] = {}
    raw: Any = None
    has_raw = False
    for arg in plan.args:
        if arg.name not in arguments:
            continue
        value = arguments[arg.name]
        if arg.location == "path":
            text = ",".join(_text(v) for v in value) if isinstance(value, list) else _text(value)
            path = path.replace("{" + arg.wire + "}", quote(text, safe=""))
        elif arg.location == "query":
            if value is not None:
                _query(arg, value, query)
        elif arg.location == "header":
            headers[arg.wire] = ",".join(_text(v) for v in value) if isinstance(value, list) else _text(value)
        elif arg.location == "cookie":
            cookies.append(f"{arg.wire}={quote(_text(value), safe='')}")
        elif arg.location == "field":
            fields[arg.wire] = value
        else:
            raw, has_raw = value, True
    if cookies:
        headers["Cookie"] = "; ".join(cookies)
    url = base.rstrip("/") + path
    kwargs: dict[str, Any] = {"params": query or None, "headers": headers}
    if plan.body == "json":
        if fields or has_raw:
            kwargs["content"] = _json.dumps(fields if fields else raw)
            headers["Content-Type"] = plan.content_type if plan.content_type and "*" not in plan.content_type \
                else "application/json"
    elif plan.body == "form":
        if fields:
            kwargs["data"] = {k: ([_text(x) for x in v] if isinstance(v, list) else _text(v))
                              for k, v in fields.items()}
    elif plan.body == "multipart":
        by_name = {a.wire: a for a in plan.args if a.location == "field"}
        files = [(k, (k if by_name[k].binary else None, _bytes(by_name[k], v))) for k, v in fields.items()]
        if files:
            kwargs["files"] = files
    elif plan.body == "raw" and has_raw:
        body_arg = next(a for a in plan.args if a.location == "body")
        kwargs["content"] = _bytes(body_arg, raw)
        headers["Content-Type"] = plan.content_type or "application/octet-stream"
    return client.build_request(plan.method.upper(), url, **kwargs)


async def read_bounded(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of the body, and whether there was more (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    more = False
    try:
        async for chunk in response.aiter_bytes():
            room = limit - size
            if len(chunk) > room:
                chunks.append(chunk[:room])
                more = True
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        await response.aclose()
    return b"".join(chunks), more
