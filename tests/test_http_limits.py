"""The HTTP server's own ceilings (mcpcore.http_limits) under a real ``mcpcore run``, over raw
sockets: header caps (431), header and body deadlines (408), the connection bound (503), and
the ordinary traffic that must pass them untouched."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .servers import ROOT, free_port, run_server, serve

pytestmark = pytest.mark.slow

DEADLINE = 0.6  # seconds: MCP_HTTP_HEADER_TIMEOUT_MS and MCP_HTTP_BODY_TIMEOUT_MS of the test servers
SLACK = 1.5  # a loaded 2-core machine
SHORT = {"MCP_HTTP_HEADER_TIMEOUT_MS": str(int(DEADLINE * 1000)), "MCP_HTTP_BODY_TIMEOUT_MS": str(int(DEADLINE * 1000))}
MB = 1 << 20


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[int, int]]:
    """tests.apps.body_echo with short deadlines: (port, pid)."""
    with serve("tests.apps.body_echo:app", env=SHORT) as (base, proc):
        yield httpx.URL(base).port or 0, proc.pid


@pytest.fixture(scope="module")
def mcp() -> Iterator[tuple[int, int]]:
    """The example McpApp with the default limits: (port, pid)."""
    from .servers import PROCESSES

    with run_server("examples.everything:app", env={"MCP_LOG_LEVEL": "warning"}) as url:
        yield httpx.URL(url).port or 0, PROCESSES[url].pid


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_all(s: socket.socket, timeout: float = 10.0) -> bytes:
    """Everything the server sends until it closes (a reset after some bytes ends it too)."""
    s.settimeout(timeout)
    out = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := s.recv(65536):
            out += chunk
    return out


def read_one(s: socket.socket) -> bytes:
    """One response with a Content-Length, off a kept-alive connection."""
    s.settimeout(10)
    out = b""
    while b"\r\n\r\n" not in out:
        chunk = s.recv(65536)
        assert chunk, out
        out += chunk
    top, _, rest = out.partition(b"\r\n\r\n")
    lines = top.lower().split(b"\r\n")
    length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length:"))
    while len(rest) < length:
        rest += s.recv(65536)
    return top + b"\r\n\r\n" + rest


def exchange(port: int, data: bytes) -> bytes:
    with connect(port) as s:
        s.sendall(data)
        return read_all(s)


def status_of(response: bytes) -> int:
    assert response.startswith(b"HTTP/1.1 "), response[:200]
    return int(response[9:12])


def head(path: str = "/healthz", *headers: str, method: str = "GET") -> bytes:
    return "\r\n".join([f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers, "", ""]).encode()


def flood(port: int, prefix: bytes, total: int, chunk: bytes = b"a" * 65536) -> tuple[bytes, int]:
    """Send ``prefix`` then up to ``total`` filler bytes while reading the answer; the sending
    stops once an answer has arrived or the server ends the connection. Returns the answer
    (everything read until the close) and the bytes sent."""
    sent = 0
    answered = threading.Event()
    with connect(port) as s:

        def pump() -> None:
            nonlocal sent
            with contextlib.suppress(OSError):
                s.sendall(prefix)
                while sent < total and not answered.is_set():
                    s.sendall(chunk)
                    sent += len(chunk)

        sender = threading.Thread(target=pump)
        sender.start()
        s.settimeout(30)
        out = b""
        with contextlib.suppress(ConnectionResetError):
            while data := s.recv(65536):
                out += data
                answered.set()
        answered.set()
        sender.join(30)
    return out, sent


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def header_flood_rss(port: int, pid: int, sockets: int = 4, size: int = 64 * MB) -> tuple[int, int, int]:
    """RSS (KiB) of the server before, at the peak of, and after ``sockets`` clients each sending
    a ``size``-byte header that never ends."""
    before = rss_kib(pid)
    peak = before
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_kib(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    senders = [threading.Thread(target=flood, args=(port, head("/mcp")[:-2] + b"X-Flood: ", size))
               for _ in range(sockets)]
    for t in senders:
        t.start()
    for t in senders:
        t.join(300)
    done.set()
    sampler.join()
    time.sleep(0.3)
    return before, peak, rss_kib(pid)


# -- header caps -----------------------------------------------------------------------------


def test_an_8_mb_header_is_answered_431_and_the_connection_closed(mcp: tuple[int, int]) -> None:
    port, _ = mcp
    answer, sent = flood(port, head("/mcp")[:-2] + b"X-Big: ", 8 * MB)
    assert status_of(answer) == 431
    assert b"connection: close" in answer.lower()
    assert sent < 8 * MB  # cut off long before the end
    assert status_of(exchange(port, head())) == 200  # the server is fine


def test_ten_thousand_headers_are_answered_431(mcp: tuple[int, int]) -> None:
    port, _ = mcp
    many = [f"X-H{i}: v" for i in range(10_000)]
    assert status_of(exchange(port, head("/mcp", *many))) == 431


def test_the_header_count_cap_is_exact(echo: tuple[int, int]) -> None:
    port, _ = echo
    # Host is a header too: 99 more make the 100 allowed.
    assert status_of(exchange(port, head("/healthz", *[f"X-H{i}: v" for i in range(99)]))) == 200
    assert status_of(exchange(port, head("/healthz", *[f"X-H{i}: v" for i in range(100)]))) == 431


def test_a_head_over_the_byte_cap_is_refused_even_when_it_arrives_whole(echo: tuple[int, int]) -> None:
    port, _ = echo
    assert status_of(exchange(port, head("/healthz", "X-A: " + "a" * 30_000))) == 200
    assert status_of(exchange(port, head("/healthz", "X-A: " + "a" * 33_000))) == 431
    assert status_of(exchange(port, head("/healthz?" + "q" * 33_000))) == 431  # the request line counts


def test_never_ending_headers_keep_the_server_rss_bounded(mcp: tuple[int, int]) -> None:
    port, pid = mcp
    before, peak, after = header_flood_rss(port, pid)
    print(f"server RSS under four 64 MB-header sockets: before {before // 1024} MB, peak {peak // 1024} MB, "
          f"after {after // 1024} MB")
    assert peak - before < 32 * 1024, (before, peak, after)


# -- deadlines -------------------------------------------------------------------------------


def _timed_close(port: int, first: bytes, trickle: bytes = b"", every: float = 0.1) -> tuple[bytes, float]:
    """Send ``first``, then ``trickle`` every ``every`` seconds until the server answers or
    closes; the answer and the seconds from connecting to the close."""
    start = time.monotonic()
    with connect(port) as s:
        s.sendall(first)
        s.settimeout(every)
        out = b""
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            while time.monotonic() - start < DEADLINE + SLACK + 5:
                try:
                    data = s.recv(65536)
                except TimeoutError:
                    if trickle and not out:
                        s.sendall(trickle)
                    continue
                if not data:
                    break
                out += data
        return out, time.monotonic() - start


@pytest.mark.serial
def test_trickled_header_lines_are_answered_408_at_the_deadline(echo: tuple[int, int]) -> None:
    port, _ = echo
    results: list[tuple[bytes, float]] = []
    threads = [threading.Thread(target=lambda: results.append(_timed_close(port, head()[:-2], b"X-Slow: 1\r\n")))
               for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20
    for answer, elapsed in results:
        assert status_of(answer) == 408
        assert DEADLINE - 0.05 <= elapsed < DEADLINE + SLACK, elapsed


@pytest.mark.serial
def test_a_later_request_on_a_kept_alive_connection_has_its_own_header_deadline(echo: tuple[int, int]) -> None:
    port, _ = echo
    with connect(port) as s:
        s.sendall(head())
        assert status_of(read_one(s)) == 200
        time.sleep(DEADLINE)  # idle between requests: uvicorn's keep-alive timeout (5 s) applies
        s.sendall(head()[:-2])
        start = time.monotonic()
        answer = read_all(s)
        assert status_of(answer) == 408
        assert time.monotonic() - start < DEADLINE + SLACK


@pytest.mark.serial
def test_a_withheld_body_is_answered_408_and_the_app_sees_a_disconnect(echo: tuple[int, int]) -> None:
    port, _ = echo
    seen = int(exchange(port, head("/seen")).rsplit(b"\r\n\r\n", 1)[1])
    answer, elapsed = _timed_close(port, head("/echo", "Content-Length: 100", method="POST") + b"only part")
    assert status_of(answer) == 408
    assert b"request body not received in time" in answer
    assert DEADLINE - 0.05 <= elapsed < DEADLINE + SLACK
    for _ in range(50):
        now = int(exchange(port, head("/seen")).rsplit(b"\r\n\r\n", 1)[1])
        if now == seen + 1:
            break
        time.sleep(0.05)
    assert now == seen + 1


def test_a_silent_connection_is_closed_without_an_answer(echo: tuple[int, int]) -> None:
    port, _ = echo
    answer, elapsed = _timed_close(port, b"")
    assert answer == b""
    assert DEADLINE - 0.05 <= elapsed < DEADLINE + SLACK


# -- the connection bound --------------------------------------------------------------------


def test_connections_beyond_the_bound_are_answered_503_and_closed() -> None:
    with serve("tests.apps.body_echo:app", env={"MCP_HTTP_MAX_CONNECTIONS": "4"}) as (base, _proc):
        port = httpx.URL(base).port or 0
        held = [connect(port) for _ in range(4)]
        try:
            for s in held:  # each surely accepted, then idle on keep-alive
                s.sendall(head())
                assert status_of(read_one(s)) == 200
            extra = connect(port)
            answer = read_all(extra)
            extra.close()
            assert status_of(answer) == 503
            with connect(port) as extra:  # one that sends its request at once gets the answer too
                extra.sendall(head())
                answer = read_all(extra)
            assert status_of(answer) == 503
            assert b"retry-after: 1" in answer.lower() and b"connection: close" in answer.lower()
            held.pop().close()
            for _ in range(100):  # once the server has seen the close, there is room again
                answer = exchange(port, head("/healthz", "Connection: close"))
                if status_of(answer) == 200:
                    break
                time.sleep(0.02)
            assert status_of(answer) == 200
        finally:
            for s in held:
                s.close()


# -- ordinary traffic passes -----------------------------------------------------------------


def test_keep_alive_and_pipelined_requests_still_work(echo: tuple[int, int]) -> None:
    port, _ = echo
    with connect(port) as s:
        for _ in range(3):
            s.sendall(head())
            assert status_of(read_one(s)) == 200
        body = b"x" * 10
        post = head("/echo", f"Content-Length: {len(body)}", method="POST") + body
        s.sendall(post * 4 + head("/healthz", "Connection: close"))
        answers = read_all(s)
    assert answers.count(b"HTTP/1.1 200 OK") == 5
    assert answers.count(b"\r\n\r\n10") == 4


def test_a_head_split_across_reads_and_requests_is_counted_from_its_own_start(echo: tuple[int, int]) -> None:
    port, _ = echo
    pad = "X-Pad: " + "a" * 20_000  # each head about 20 KB of the 32 KB cap, each over several reads
    with connect(port) as s:
        s.sendall(head("/echo", "Content-Length: 10", pad, method="POST")[:-4])
        time.sleep(0.1)
        s.sendall(b"\r\n\r\n" + b"z" * 10 + head("/healthz", "X-Pad: " + "b" * 5000)[:-4])
        time.sleep(0.1)
        s.sendall(b"b" * 15_000 + b"\r\nConnection: close\r\n\r\n")
        answers = read_all(s)
    assert answers.count(b"HTTP/1.1 200 OK") == 2, answers[:300]


def test_a_large_body_in_many_slow_chunks_is_read_whole(echo: tuple[int, int]) -> None:
    port, _ = echo
    size = 1_000_000
    with connect(port) as s:
        s.sendall(head("/echo", f"Content-Length: {size}", method="POST"))
        piece = b"y" * 4096
        left = size
        while left:
            n = min(left, len(piece))
            s.sendall(piece[:n])
            left -= n
            if left % (40 * 4096) == 0:
                time.sleep(DEADLINE / 12)  # about half the body deadline in all
        answer = read_one(s)
    assert status_of(answer) == 200 and answer.endswith(str(size).encode())


def test_a_chunked_body_is_read_whole(echo: tuple[int, int]) -> None:
    port, _ = echo
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in [b"a" * 1000] * 300) + b"0\r\n\r\n"
    with connect(port) as s:
        s.sendall(head("/echo", "Transfer-Encoding: chunked", "Connection: close", method="POST"))
        for i in range(0, len(chunks), 997):
            s.sendall(chunks[i:i + 997])
        answer = read_all(s)
    assert status_of(answer) == 200 and answer.endswith(b"300000")


def test_a_websocket_outlives_the_deadlines(echo: tuple[int, int]) -> None:
    from websockets.sync.client import connect as ws_connect

    port, _ = echo
    with ws_connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
        ws.send("one")
        assert ws.recv(timeout=5) == "one"
        time.sleep(DEADLINE * 2.5)  # past both deadlines
        ws.send("two")
        assert ws.recv(timeout=5) == "two"


# -- plain uvicorn ---------------------------------------------------------------------------


def test_plain_uvicorn_takes_the_protocol_by_its_import_path() -> None:
    port = free_port()
    env = {**os.environ, "MCP_HTTP_MAX_HEADERS": "10"}
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "tests.apps.body_echo:app", "--port", str(port),
                             "--http", "mcpcore.http_limits:LimitedHttpToolsProtocol", "--log-level", "warning"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError):
                answer = exchange(port, head("/healthz", "Connection: close"))
                break
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        assert status_of(answer) == 200
        assert status_of(exchange(port, head("/healthz", *[f"X-H{i}: v" for i in range(10)]))) == 431
    finally:
        proc.terminate()
        proc.wait(10)


# -- settings --------------------------------------------------------------------------------


def test_the_limits_come_from_settings_and_bad_values_name_their_variable() -> None:
    from mcpcore import ConfigurationError, Settings
    from mcpcore.http_limits import HttpLimits

    limits = HttpLimits.from_settings(Settings.from_env({"MCP_HTTP_MAX_HEADER_BYTES": "4096",
                                                         "MCP_HTTP_MAX_HEADERS": "20",
                                                         "MCP_HTTP_HEADER_TIMEOUT_MS": "1500",
                                                         "MCP_HTTP_BODY_TIMEOUT_MS": "2500",
                                                         "MCP_HTTP_MAX_CONNECTIONS": "7"}))
    assert limits == HttpLimits(max_header_bytes=4096, max_headers=20, header_timeout=1.5, body_timeout=2.5,
                                max_connections=7)
    assert HttpLimits.from_settings(Settings.from_env({})) == HttpLimits()
    for var, raw in [("MCP_HTTP_MAX_HEADER_BYTES", "10"), ("MCP_HTTP_MAX_HEADERS", "0"),
                     ("MCP_HTTP_HEADER_TIMEOUT_MS", "soon"), ("MCP_HTTP_BODY_TIMEOUT_MS", "-1"),
                     ("MCP_HTTP_MAX_CONNECTIONS", "0")]:
        with pytest.raises(ConfigurationError, match=var):
            Settings.from_env({var: raw})
