"""The proxy's HTTP/1.1 client against a real socket server that answers as written: bodies by
length, chunked and to the connection's end, kept-alive connections reused, and a connection the
server closed while idle."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from mcpcore.compose.h1 import ExchangeError, H1Pool, _Conn

pytestmark = pytest.mark.anyio

Answer = Callable[[bytes, int], bytes]
"""The request's head and the connection's request number -> the raw answer."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.asynccontextmanager
async def _serve(answer: Answer, seen: list[bytes], keep: int = 100) -> AsyncIterator[str]:
    """A server on a free port; each connection is closed after ``keep`` answers."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        n = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                body = await reader.readexactly(length)
                seen.append(head + body)
                out = answer(head, n)
                n += 1
                writer.write(out)
                await writer.drain()
                if n >= keep or (b"content-length" not in out.lower() and b"chunked" not in out.lower()):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp?x=1"
    finally:
        server.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 1)


@pytest.fixture
async def seen() -> list[bytes]:
    return []


def _json(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def test_bodies_by_length_and_chunked_on_one_kept_alive_connection(seen: list[bytes]) -> None:
    def answer(head: bytes, n: int) -> bytes:
        if n == 0:
            return _json(b'{"a":1}')
        return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"7\r\ndata: 1\r\n6\r\n\ndata:\r\n4\r\n 2\n\n\r\n0\r\n\r\n")

    async with _serve(answer, seen) as url:
        pool = H1Pool(url)
        first = await pool.request("POST", {"content-type": "application/json", "x-k": "v"}, b'{"q":1}')
        assert first.status == 200 and first.headers["content-type"] == "application/json"
        assert await first.read() == b'{"a":1}'
        second = await pool.request("POST", {}, b"{}")
        assert [line async for line in second.lines()] == ["data: 1", "data: 2", ""]
        assert pool.opened == 1  # both on one connection
        assert seen[0].startswith(b"POST /mcp?x=1 HTTP/1.1\r\nhost: 127.0.0.1:")
        assert b"x-k: v\r\ncontent-length: 7\r\n\r\n{\"q\":1}" in seen[0]
        await pool.aclose()


async def test_a_body_to_the_connections_end_is_read_and_the_connection_not_kept(seen: list[bytes]) -> None:
    async with _serve(lambda head, n: b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\r\ngone", seen) as url:
        pool = H1Pool(url)
        for _ in range(2):
            resp = await pool.request("GET", {})
            assert resp.status == 404 and await resp.read() == b"gone"
        assert pool.opened == 2
        await pool.aclose()


async def test_a_connection_closed_while_idle_is_not_reused(seen: list[bytes]) -> None:
    async with _serve(lambda head, n: _json(b"{}"), seen, keep=1) as url:
        pool = H1Pool(url)
        assert await (await pool.request("POST", {}, b"{}")).read() == b"{}"
        for _ in range(50):  # the server closes the connection after its first answer
            if not pool._idle or not pool._idle[0].usable():
                break
            await asyncio.sleep(0.01)
        assert await (await pool.request("POST", {}, b"{}")).read() == b"{}"
        assert pool.opened == 2 and len(seen) == 2  # sent once on a new connection
        await pool.aclose()


async def test_a_request_that_finds_its_reused_connection_closed_is_sent_once_more(
        seen: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    async with _serve(lambda head, n: _json(b"{}"), seen, keep=1) as url:
        pool = H1Pool(url)
        assert await (await pool.request("POST", {}, b"{}")).read() == b"{}"
        await asyncio.sleep(0.1)  # the server has closed it
        monkeypatch.setattr(_Conn, "usable", lambda self: True)  # as if the close had not been seen yet
        assert await (await pool.request("POST", {}, b"{}")).read() == b"{}"
        assert pool.opened == 2
        await pool.aclose()


async def test_an_answer_broken_off_and_a_refused_connection_are_exchange_errors(seen: list[bytes]) -> None:
    async with _serve(lambda head, n: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", seen,
                      keep=1) as url:
        pool = H1Pool(url)
        resp = await pool.request("POST", {}, b"{}")
        with pytest.raises(ExchangeError, match="broke off"):
            await resp.read()
        await pool.aclose()
    closed = H1Pool(url)  # the server is gone
    with pytest.raises(ExchangeError, match="cannot connect"):
        await closed.request("POST", {}, b"{}")
