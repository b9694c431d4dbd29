"""An httpx transport that runs an ASGI app in process and streams its response.

httpx's own ``ASGITransport`` buffers the whole response, so it cannot show SSE events as they
arrive or simulate a client closing a stream. This one runs the app as a task, hands body chunks
over as they are sent, and sends ``http.disconnect`` when the response is closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import unquote

import httpx

from ..asgi_types import Message, Receive, Scope, Send

__all__ = ["StreamingASGITransport"]

ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


_DETACHED: set[asyncio.Task[None]] = set()


class _Body(httpx.AsyncByteStream):
    def __init__(self, queue: asyncio.Queue[bytes | None], task: asyncio.Task[None], gone: asyncio.Event) -> None:
        self._queue = queue
        self._task = task
        self._gone = gone

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await self._queue.get()
            if chunk is None:
                return
            yield chunk

    async def aclose(self) -> None:
        # Like a real server: the client going away is signalled (http.disconnect), and the app
        # decides what to do; its task is not cancelled here.
        self._gone.set()
        if not self._task.done():
            _DETACHED.add(self._task)
            self._task.add_done_callback(_DETACHED.discard)


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """Serve httpx requests from ``app`` in process, streaming responses chunk by chunk."""

    def __init__(self, app: ASGIApp, *, client: tuple[str, int] = ("127.0.0.1", 50000), root_path: str = "") -> None:
        self.app = app
        self.client = client
        self.root_path = root_path

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": url.scheme,
            "path": unquote(url.path),
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "root_path": self.root_path,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "client": self.client,
            "server": (url.host, port),
            "state": {},
        }
        sent_body = False
        gone = asyncio.Event()
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = asyncio.get_running_loop().create_future()

        async def receive() -> Message:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                if not started.done():
                    started.set_result((message["status"], list(message.get("headers", []))))
            elif message["type"] == "http.response.body":
                if gone.is_set():
                    return
                chunk = message.get("body", b"")
                if chunk:
                    queue.put_nowait(chunk)
                if not message.get("more_body", False):
                    queue.put_nowait(None)

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            except BaseException as exc:
                if not started.done():
                    started.set_exception(exc)
                raise
            finally:
                queue.put_nowait(None)
                if not started.done():
                    started.set_exception(RuntimeError("the app returned without a response"))

        task = asyncio.get_running_loop().create_task(run())
        status, headers = await started
        return httpx.Response(status, headers=headers, stream=_Body(queue, task, gone), request=request)
