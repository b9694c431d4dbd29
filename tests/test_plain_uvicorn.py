"""The HTTP ceilings however the app is served: under plain ``uvicorn server:app`` (no
``--http`` option) the app finds the uvicorn that serves it and has it build its connections
with :class:`mcpcore.http_limits.LimitedHttpToolsProtocol` (at startup, or at the first request
when uvicorn runs no lifespan); where it cannot (``--http h11``, another server), it says so at
startup, naming the ``--http`` form. Real ``uvicorn`` subprocesses over raw sockets."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .servers import serve, server_log
from .test_http_limits import DEADLINE, MB, SHORT, SLACK, _timed_close, flood, head, header_flood_rss, status_of

pytestmark = pytest.mark.slow

LIMITS = {**SHORT, "MCP_HTTP_MAX_HEADER_BYTES": "4096", "MCP_HTTP_MAX_HEADERS": "20"}
NAMED = "--http mcpcore.http_limits:LimitedHttpToolsProtocol"


@pytest.fixture(scope="module")
def plain() -> Iterator[tuple[int, str, int]]:
    """``uvicorn examples.everything:app``, nothing else: (port, base URL, pid)."""
    with serve("examples.everything:app", env=LIMITS, uvicorn=[]) as (base, proc):
        yield httpx.URL(base).port or 0, base, proc.pid


def test_a_large_header_is_answered_431(plain: tuple[int, str, int]) -> None:
    port, _, _ = plain
    answer, sent = flood(port, head()[:-2] + b"X-Big: ", 8 * MB)
    assert status_of(answer) == 431 and b"connection: close" in answer.lower()
    assert sent < 8 * MB  # refused at the cap, long before the end


def test_unfinished_headers_keep_the_server_rss_bounded(plain: tuple[int, str, int]) -> None:
    port, _, pid = plain
    before, peak, _ = header_flood_rss(port, pid)
    assert peak - before < 32 * 1024, (before, peak)


def test_too_many_header_lines_are_answered_431(plain: tuple[int, str, int]) -> None:
    port, _, _ = plain
    answer, _ = flood(port, head("/healthz", *[f"X-H{i}: v" for i in range(30)]), 0)
    assert status_of(answer) == 431


@pytest.mark.serial
def test_an_unfinished_head_is_answered_408_at_the_deadline(plain: tuple[int, str, int]) -> None:
    port, _, _ = plain
    answer, elapsed = _timed_close(port, head()[:-2])
    assert status_of(answer) == 408 and DEADLINE - 0.05 <= elapsed < DEADLINE + SLACK, elapsed


@pytest.mark.serial
def test_a_dribbled_head_is_answered_408_at_the_deadline(plain: tuple[int, str, int]) -> None:
    port, _, _ = plain
    answer, elapsed = _timed_close(port, head()[:-2], b"X-Slow: 1\r\n")
    assert status_of(answer) == 408 and DEADLINE - 0.05 <= elapsed < DEADLINE + SLACK, elapsed


def test_ordinary_requests_pass_and_nothing_is_to_be_done(plain: tuple[int, str, int]) -> None:
    _, base, _ = plain
    assert httpx.get(base + "/healthz").status_code == 200
    log = server_log(base)
    assert NAMED not in log, log[-2000:]


def test_without_a_lifespan_the_first_request_puts_the_limits_on_later_connections() -> None:
    with serve("examples.everything:app", env=LIMITS, uvicorn=["--lifespan", "off"]) as (base, _):
        port = httpx.URL(base).port or 0
        answer, _ = flood(port, head()[:-2] + b"X-Big: ", 2 << 20)
    assert status_of(answer) == 431


def test_where_the_limits_cannot_be_applied_startup_says_how() -> None:
    with serve("examples.everything:app", env=LIMITS, uvicorn=["--http", "h11"]) as (base, _):
        log = server_log(base)
    assert NAMED in log and "H11Protocol" in log, log[-2000:]
    assert log.count(NAMED) == 1  # said once, at startup, not again at the first request
