"""The proxy's HTTP/1.1 client for one backend: a pool of kept-alive connections on asyncio streams.

A proxied call is one POST to one origin with a handful of headers, answered with JSON or an
SSE stream. httpx does that through four layers (its models, cookies, URL parsing, httpcore on
anyio) that cost a gateway about 4 million instructions per proxied call, 38 times the direct
call (``python -m benchmarks.proxy_count``); this client does only what the proxy needs:
``Content-Length`` and chunked bodies, kept-alive connections reused most recent first (a
connection the backend closed while idle is dropped, and a request that finds its reused
connection closed before any answer is sent once more on a new one), ``https`` with the
system's certificates. It honours no ``HTTP(S)_PROXY`` variable and no cookies; a request whose
credential is not a plain header goes through httpx (:class:`HttpxExchange`), as does every
request when the proxy is given an httpx ``transport``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

__all__ = ["ExchangeError", "H1Pool", "HttpxExchange", "Response"]

_LIMIT = 1 << 20  # the longest header block or chunk-size line read


class ExchangeError(Exception):
    """The backend could not be reached or broke the connection (refused, reset, timed out)."""


class Response(Protocol):
    """A backend's answer, its body not read yet."""

    status: int
    headers: Mapping[str, str]
    """Lower-case names."""

    async def read(self) -> bytes: ...

    def lines(self) -> AsyncIterator[str]: ...

    async def aclose(self) -> None: ...


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class _H1Response:
    __slots__ = ("_chunked", "_conn", "_left", "_pool", "_to_eof", "headers", "status")

    def __init__(self, pool: H1Pool, conn: _Conn, status: int, headers: dict[str, str], keep: bool) -> None:
        self._pool = pool
        self._conn: _Conn | None = conn
        self.status = status
        self.headers: Mapping[str, str] = headers
        self._chunked = "chunked" in headers.get("transfer-encoding", "")
        length = headers.get("content-length")
        self._left = int(length) if length is not None and not self._chunked else -1
        self._to_eof = not self._chunked and self._left < 0
        if not keep or self._to_eof:
            pool._keep_not(conn)

    async def _pieces(self) -> AsyncIterator[bytes]:
        conn = self._conn
        assert conn is not None
        reader = conn.reader
        try:
            if self._chunked:
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
                    if size == 0:
                        while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                            pass
                        break
                    data = await reader.readexactly(size + 2)
                    yield data[:-2]
            elif self._to_eof:
                while data := await reader.read(65536):
                    yield data
            elif self._left > 0:
                yield await reader.readexactly(self._left)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            self._drop()
            raise ExchangeError(f"the backend broke off its answer ({type(exc).__name__})") from exc
        self._conn = None
        self._pool._release(conn)

    async def read(self) -> bytes:
        return b"".join([piece async for piece in self._pieces()])

    async def lines(self) -> AsyncIterator[str]:
        rest = b""
        async for piece in self._pieces():
            rest += piece
            *done, rest = rest.split(b"\n")
            for line in done:
                yield line.rstrip(b"\r").decode("utf-8", "replace")
        if rest:
            yield rest.rstrip(b"\r").decode("utf-8", "replace")

    def _drop(self) -> None:
        if self._conn is not None:
            self._pool._keep_not(self._conn)
            self._conn.close()
            self._conn = None

    async def aclose(self) -> None:
        self._drop()  # an answer not read to its end leaves its connection unusable


class H1Pool:
    """Kept-alive HTTP/1.1 connections to the origin of ``url``.

    Args:
        url: the backend's endpoint (``http`` or ``https``).
        connect_timeout: seconds a new connection may take.
        max_idle: connections kept open between requests.
    """

    def __init__(self, url: str, *, connect_timeout: float = 5.0, max_idle: int = 256) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl = ssl.create_default_context() if parts.scheme == "https" else None
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        authority = parts.netloc.rpartition("@")[2]
        self._head = f"{target} HTTP/1.1\r\nhost: {authority}\r\n"
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self._idle: list[_Conn] = []
        self._open: set[_Conn] = set()
        self.opened = 0
        """Connections opened so far (reuse is what keeps this low)."""

    async def _connect(self) -> _Conn:
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(self.host, self.port, ssl=self._ssl, limit=_LIMIT)
        except (OSError, TimeoutError) as exc:
            raise ExchangeError(f"cannot connect to {self.host}:{self.port} ({type(exc).__name__})") from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:  # no Nagle delay between a request's writes
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(reader, writer)
        self._open.add(conn)
        self.opened += 1
        return conn

    def _release(self, conn: _Conn) -> None:
        if conn in self._open and conn.usable() and len(self._idle) < self.max_idle:
            self._idle.append(conn)
        else:
            self._keep_not(conn)
            conn.close()

    def _keep_not(self, conn: _Conn) -> None:
        self._open.discard(conn)

    def _reused(self) -> _Conn | None:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                return conn
            self._keep_not(conn)
            conn.close()
        return None

    async def request(self, method: str, headers: Mapping[str, str], body: bytes | None = None) -> Response:
        """Send a request; its answer once the status line and headers have come (read its body,
        or ``aclose`` it, to free the connection). Time limits are the caller's (``asyncio.timeout``).

        Raises:
            ExchangeError: no connection, or it broke before the answer's headers.
        """
        lines = [method, " ", self._head]
        for k, v in headers.items():
            lines += [k, ": ", v, "\r\n"]
        if body is not None:
            lines += ["content-length: ", str(len(body)), "\r\n"]
        lines.append("\r\n")
        data = "".join(lines).encode("latin-1") + (body or b"")
        conn = self._reused()
        if conn is not None:
            try:
                return await self._exchange(conn, data)
            except (OSError, asyncio.IncompleteReadError):  # closed by the backend as it was reused
                conn.close()
                self._keep_not(conn)
        conn = await self._connect()
        try:
            return await self._exchange(conn, data)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            conn.close()
            self._keep_not(conn)
            raise ExchangeError(f"the backend broke the connection ({type(exc).__name__})") from exc

    async def _exchange(self, conn: _Conn, data: bytes) -> Response:
        try:
            conn.writer.write(data)
            head = await conn.reader.readuntil(b"\r\n\r\n")
        except BaseException:
            conn.close()
            self._keep_not(conn)
            raise
        status_line, *rest = head[:-4].decode("latin-1").split("\r\n")
        version, _, tail = status_line.partition(" ")
        status = int(tail[:3])
        headers: dict[str, str] = {}
        for line in rest:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        keep = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
        return _H1Response(self, conn, status, headers, keep)

    async def aclose(self) -> None:
        """Close every connection."""
        for conn in list(self._open) + self._idle:
            conn.close()
        self._open.clear()
        self._idle.clear()


class _HttpxResponse:
    __slots__ = ("_resp", "headers", "status")

    def __init__(self, resp: httpx.Response) -> None:
        self._resp = resp
        self.status = resp.status_code
        self.headers: Mapping[str, str] = resp.headers

    async def read(self) -> bytes:
        try:
            return await self._resp.aread()
        except httpx.TransportError as exc:
            raise ExchangeError(type(exc).__name__) from exc
        finally:
            await self._resp.aclose()

    async def lines(self) -> AsyncIterator[str]:
        try:
            async for line in self._resp.aiter_lines():
                yield line
        except httpx.TransportError as exc:
            raise ExchangeError(type(exc).__name__) from exc

    async def aclose(self) -> None:
        await self._resp.aclose()


class HttpxExchange:
    """Requests through an ``httpx.AsyncClient``: for a credential that is an auth flow (a token
    refreshed on a 401) and for a given ``transport`` (tests reach an app in process)."""

    def __init__(self, url: str, client: httpx.AsyncClient) -> None:
        self.url = url
        self.client = client

    async def request(self, method: str, headers: Mapping[str, str], body: bytes | None = None,
                      auth: Any = httpx.USE_CLIENT_DEFAULT) -> Response:
        """As :meth:`H1Pool.request`, with an ``httpx.Auth``."""
        req = self.client.build_request(method, self.url, content=body, headers=dict(headers),
                                        timeout=httpx.Timeout(None, connect=5.0))
        try:
            return _HttpxResponse(await self.client.send(req, stream=True, auth=auth))
        except httpx.TransportError as exc:
            raise ExchangeError(type(exc).__name__) from exc
