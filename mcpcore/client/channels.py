"""How a client's messages travel: streamable HTTP (one POST per message, answered as JSON or
an SSE stream) or a stdio subprocess (newline-delimited JSON-RPC on its stdin and stdout).

A channel hands every message that is not the answer it waits for (notifications, requests the
server sends the client) to the ``on_message`` it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Mapping, Sequence
from typing import Any

import httpx

from .. import _json
from ..errors import JsonRpcErrorCode, McpError
from .sse import parse_sse

__all__ = ["BearerAuth", "HttpChannel", "StdioChannel", "http_error"]

OnMessage = Callable[[dict[str, Any]], None]


def http_error(status: int, text: str) -> McpError:
    """The :class:`McpError` of an HTTP answer that carries no JSON-RPC message."""
    detail = " ".join(text.split())[:300] or "no body"
    if status == 401:
        err = McpError(JsonRpcErrorCode.Unauthorized,
                       "HTTP 401: the server wants credentials (pass auth= a token, OAuth() to sign in, or an "
                       f"httpx.Auth): {detail}")
    elif status == 403:
        err = McpError(JsonRpcErrorCode.Forbidden, f"HTTP 403: the server refused these credentials: {detail}")
    elif status == 404:
        err = McpError(JsonRpcErrorCode.MethodNotFound, f"HTTP 404: nothing answers MCP at this URL: {detail}")
    else:
        err = McpError(JsonRpcErrorCode.InternalError, f"HTTP {status}: {detail}")
    err.http_status = status  # type: ignore[attr-defined]
    return err


class BearerAuth(httpx.Auth):
    """``Authorization: Bearer <token>`` on every request."""

    def __init__(self, token: str) -> None:
        self._value = f"Bearer {token}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._value
        yield request


class HttpChannel:
    """Streamable HTTP through an ``httpx.AsyncClient`` (a real URL or an in-process app)."""

    def __init__(self, http: httpx.AsyncClient, on_message: OnMessage) -> None:
        self.http = http
        self.on_message = on_message

    async def exchange(self, url: str, body: dict[str, Any], headers: Mapping[str, str],
                       ) -> tuple[dict[str, Any], httpx.Response]:
        """POST one request and return its answer (read from JSON or from the SSE stream)."""
        rid = body.get("id")
        async with self.http.stream("POST", url, content=_json.dumps(body), headers=dict(headers)) as resp:
            if resp.headers.get("content-type", "").startswith("text/event-stream"):
                return await self._read_stream(resp, rid), resp
            data = await resp.aread()
        if not data:
            err = McpError(JsonRpcErrorCode.InternalError, f"empty HTTP {resp.status_code} response")
            err.http_status = resp.status_code  # type: ignore[attr-defined]
            raise err
        try:
            reply = _json.loads(data)
        except ValueError:
            raise http_error(resp.status_code, data.decode("utf-8", "replace")) from None
        if not isinstance(reply, dict) or ("result" not in reply and "error" not in reply):
            raise http_error(resp.status_code, data.decode("utf-8", "replace"))
        return reply, resp

    async def _read_stream(self, resp: httpx.Response, rid: Any) -> dict[str, Any]:
        async for ev in parse_sse(resp.aiter_lines()):
            if not ev.get("data"):
                continue
            msg = _json.loads(ev["data"])
            if "method" in msg:
                self.on_message(msg)
            elif msg.get("id") == rid:
                return dict(msg)
        raise McpError(JsonRpcErrorCode.InternalError, "the stream ended without a response")

    async def send(self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> httpx.Response:
        """POST a notification or an answer to the server's request."""
        return await self.http.post(url, content=_json.dumps(body), headers=dict(headers))

    async def events(self, method: str, url: str, body: Mapping[str, Any] | None,
                     headers: Mapping[str, str]) -> tuple[httpx.Response, AsyncIterator[dict[str, Any]]]:
        """Open a long stream (a GET stream, or a ``subscriptions/listen`` POST) and return the
        response and an iterator of its messages. Close it with ``await response.aclose()``."""
        content = _json.dumps(body) if body is not None else None
        resp = await self.http.send(self.http.build_request(method, url, content=content, headers=dict(headers)),
                                    stream=True)
        if resp.status_code >= 400 or not resp.headers.get("content-type", "").startswith("text/event-stream"):
            data = await resp.aread()
            await resp.aclose()
            with contextlib.suppress(ValueError):
                reply = _json.loads(data)
                if isinstance(reply, dict) and isinstance(reply.get("error"), dict):
                    e = reply["error"]
                    raise McpError(e.get("code", JsonRpcErrorCode.InternalError), e.get("message"), e.get("data"))
            raise http_error(resp.status_code, data.decode("utf-8", "replace"))

        async def messages() -> AsyncIterator[dict[str, Any]]:
            async for ev in parse_sse(resp.aiter_lines()):
                if ev.get("data"):
                    yield _json.loads(ev["data"])

        return resp, messages()

    async def close(self) -> None:
        await self.http.aclose()


class StdioChannel:
    """A server run as a subprocess, spoken to over its stdin and stdout.

    The server's stderr is read into a short buffer: its last lines are quoted when the process
    exits while a request waits.
    """

    def __init__(self, command: Sequence[str], on_message: OnMessage, *, cwd: str | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        if not command:
            raise ValueError("a stdio server needs a command, e.g. ['python', '-m', 'myserver']")
        self.command = list(command)
        self.cwd = cwd
        self.env = {**os.environ, **(env or {})}
        self.on_message = on_message
        self.proc: asyncio.subprocess.Process | None = None
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._readers: list[asyncio.Task[None]] = []
        self._write_lock = asyncio.Lock()
        self._gone: str | None = None

    async def open(self) -> None:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=self.cwd, env=self.env, limit=64 * 2**20)
        except OSError as exc:
            raise McpError(JsonRpcErrorCode.InternalError,
                           f"cannot start the stdio server {self.command[0]!r}: {exc.strerror or exc}") from exc
        loop = asyncio.get_running_loop()
        self._readers = [loop.create_task(self._read_stdout()), loop.create_task(self._read_stderr())]

    async def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            try:
                msg = _json.loads(line)
            except ValueError:
                self.stderr_tail.append("(stdout) " + line.decode("utf-8", "replace").rstrip())
                continue
            if not isinstance(msg, dict):
                continue
            if "method" in msg:
                self.on_message(msg)
                continue
            fut = self._pending.pop(msg.get("id"), None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        code = await self.proc.wait()
        tail = " | ".join(list(self.stderr_tail)[-3:])
        self._gone = f"the stdio server exited (code {code})" + (f": {tail}" if tail else "")
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(McpError(JsonRpcErrorCode.InternalError, self._gone))
        self._pending.clear()

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())

    async def _write(self, body: Mapping[str, Any]) -> None:
        if self._gone is not None or self.proc is None or self.proc.stdin is None:
            raise McpError(JsonRpcErrorCode.InternalError, self._gone or "the stdio server is not running")
        async with self._write_lock:
            self.proc.stdin.write(_json.dumps(body) + b"\n")
            await self.proc.stdin.drain()

    async def exchange(self, body: dict[str, Any], seconds: float | None) -> dict[str, Any]:
        """Write one request and wait for its answer (at most ``seconds``)."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[body["id"]] = fut
        try:
            await self._write(body)
            return await asyncio.wait_for(fut, seconds)
        except TimeoutError:
            raise McpError(JsonRpcErrorCode.Timeout, f"{body.get('method')} got no answer within {seconds:g} s "
                           "from the stdio server") from None
        finally:
            self._pending.pop(body["id"], None)

    def watch(self, request_id: Any) -> asyncio.Future[dict[str, Any]]:
        """A future the answer to ``request_id`` settles (for a request sent with :meth:`send`)."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        return fut

    async def send(self, body: Mapping[str, Any]) -> None:
        """Write a notification, a request answered through :meth:`watch`, or an answer."""
        await self._write(body)

    async def close(self) -> None:
        """Close stdin, then wait; terminate and kill when the server does not exit."""
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            if proc.stdin is not None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
            for stop in (None, proc.terminate, proc.kill):
                if stop is not None:
                    with contextlib.suppress(ProcessLookupError):
                        stop()
                try:
                    await asyncio.wait_for(proc.wait(), 3)
                    break
                except TimeoutError:
                    continue
        for task in self._readers:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 3)
