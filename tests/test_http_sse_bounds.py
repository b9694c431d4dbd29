"""The 2024-11-05 HTTP+SSE transport's bounds, under a real server: a stream whose client never
reads holds at most ``MCP_HTTP_STREAM_QUEUE_MAX`` answers, then is dropped (its session ends: the
next POST is 404, as for any closed session), so the server's memory stays put; and a connection
has at most ``MCP_HTTP_LEGACY_SSE_MAX_IN_FLIGHT`` requests running, one more is refused 503 with
``Retry-After``, as the streamable transport refuses what is over a bound."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator

import httpx
import orjson
import pytest

from mcpcore.testing import parse_sse

from .servers import PROCESSES, run_server
from .test_http_limits import rss_kib

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

QUEUE, IN_FLIGHT = 16, 4
Event = dict[str, str]
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    env = {"MCP_HTTP_LEGACY_SSE": "true", "MCP_HTTP_STREAM_QUEUE_MAX": str(QUEUE),
           "MCP_HTTP_LEGACY_SSE_MAX_IN_FLIGHT": str(IN_FLIGHT), "MCP_LOG_LEVEL": "warning"}
    with run_server("tests.apps.sse_bounds:app", env=env) as url:
        yield url.rsplit("/mcp", 1)[0], PROCESSES[url].pid


def call(rid: int, name: str, arguments: dict[str, object]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                         "params": {"name": name, "arguments": arguments}})


def deaf_stream(base: str) -> tuple[socket.socket, str]:
    """Open ``/sse`` on a raw socket with a small receive buffer, read up to the ``endpoint``
    event, and never read again: the messages URL and the socket (close it to leave)."""
    url = httpx.URL(base)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((url.host, url.port or 80))
    s.sendall(f"GET /sse HTTP/1.1\r\nHost: {url.host}:{url.port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    seen = b""
    while b"\n\n" not in seen.partition(b"event: endpoint")[2]:
        chunk = s.recv(4096)
        assert chunk, seen
        seen += chunk
    endpoint = seen.partition(b"event: endpoint")[2].partition(b"data: ")[2].partition(b"\n")[0]
    return s, base + endpoint.strip().decode()


async def test_a_stream_whose_client_never_reads_is_dropped_at_its_bound(server: tuple[str, int]) -> None:
    base, pid = server
    sock, messages = deaf_stream(base)
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.post(messages, content=orjson.dumps(INIT),
                                    headers={"content-type": "application/json"})).status_code == 202
            before = rss_kib(pid)
            statuses = []
            for i in range(400):  # 100 KB answers: 40 MB if they all waited
                r = await http.post(messages, content=call(i + 1, "big", {"size": 100_000}),
                                    headers={"content-type": "application/json"})
                statuses.append(r.status_code)
                if r.status_code == 404:
                    break
                await asyncio.sleep(0.005)  # let answers queue rather than run into the in-flight bound
            grown = rss_kib(pid) - before
    finally:
        sock.close()
    assert statuses[-1] == 404, statuses[-5:]
    assert set(statuses[:-1]) <= {202, 503}, set(statuses)
    assert grown < 15_000, f"the server grew {grown} KiB"


@contextlib.asynccontextmanager
async def reading_stream(http: httpx.AsyncClient, base: str) -> AsyncIterator[tuple[str, AsyncIterator[Event]]]:
    """An ``/sse`` stream read as it comes: the messages URL and its events."""
    async with http.stream("GET", f"{base}/sse") as resp:
        events = parse_sse(resp.aiter_lines())
        endpoint = (await anext(events))["data"]
        yield base + endpoint, events


async def test_requests_in_flight_per_connection_are_bounded(server: tuple[str, int]) -> None:
    base, _ = server
    h = {"content-type": "application/json"}
    async with httpx.AsyncClient(timeout=10) as http, reading_stream(http, base) as (messages, events):
        assert (await http.post(messages, content=orjson.dumps(INIT), headers=h)).status_code == 202
        await anext(events)  # the initialize answer
        running = [await http.post(messages, content=call(i + 1, "wait", {"seconds": 1.5}), headers=h)
                   for i in range(IN_FLIGHT)]
        over = await http.post(messages, content=call(99, "wait", {"seconds": 0}), headers=h)
        answer = await http.post(messages, content=orjson.dumps({"jsonrpc": "2.0", "id": 7, "result": {}}),
                                 headers=h)  # an answer to the server is never refused: requests may wait on it
        assert [r.status_code for r in running] == [202] * IN_FLIGHT
        assert answer.status_code == 202
        assert over.status_code == 503 and over.headers["retry-after"], over.text
        error = over.json()["error"]
        assert error["code"] == -32000 and error["data"]["reason"] == "too_many_requests_in_flight"
        assert over.json()["id"] == 99
        done = [orjson.loads((await anext(events))["data"])["id"] for _ in range(IN_FLIGHT)]
        assert sorted(done) == [1, 2, 3, 4]
        again = await http.post(messages, content=call(100, "wait", {"seconds": 0}), headers=h)
        assert again.status_code == 202
