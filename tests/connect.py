"""The ``connect`` fixture: one test, three ways in.

A test that takes ``connect`` runs three times: over streamable HTTP in the 2025 era (a
session), over streamable HTTP in the 2026-07-28 era (the per-request envelope) and over stdio
(newline-delimited JSON, a 2025 session). ``async with connect(app) as c`` gives the test a
:class:`~mcpcore.client.Client` (``list_tools``, ``call_tool``, ``read_resource``,
``get_prompt``, ``request``) and ``c.way``, the way it came in::

    async def test_search(connect: Connect) -> None:
        async with connect(example_app()) as c:
            assert (await c.call_tool("search", {"query": "red"}))["isError"] is False

The HTTP ways serve the app in process; stdio runs the app's own stdio transport in process,
its stdin and stdout two in-memory pipes, so any app a test builds can be served all three
ways (``tests/test_stdio.py`` covers the real process and its pipes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from mcpcore import McpApp
from mcpcore.client import Client
from mcpcore.client.channels import StdioChannel

__all__ = ["WAYS", "Connect", "connect"]

WAYS = ("http-2025", "http-2026", "stdio")
"""The ways in a ``connect`` test runs over, its parameter ids."""

Connect = Callable[..., contextlib.AbstractAsyncContextManager[Client]]


class _Sink:
    """The server's stdout: each write lands in the client's reader (from the writer's thread)."""

    def __init__(self, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
        self.reader, self.loop = reader, loop

    def write(self, data: bytes) -> None:
        self.loop.call_soon_threadsafe(self.reader.feed_data, bytes(data))

    def flush(self) -> None:
        pass


class _Pipe:
    """The client's stdin: what the client writes is the server's next lines."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def write(self, data: bytes) -> None:
        self.reader.feed_data(data)

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def close(self) -> None:
        self.reader.feed_eof()


class _ServedApp:
    """What :class:`StdioChannel` reads of its server process, for an app served in this loop."""

    def __init__(self, app: McpApp) -> None:
        loop = asyncio.get_running_loop()
        server_in, self.stdout, self.stderr = asyncio.StreamReader(), asyncio.StreamReader(), asyncio.StreamReader()
        self.stdin = _Pipe(server_in)
        self.returncode: int | None = None
        self._task = loop.create_task(app.serve_stdio(server_in, _Sink(self.stdout, loop)))
        self._task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self.returncode = 0 if not task.cancelled() and task.exception() is None else 1
        self.stdout.feed_eof()
        self.stderr.feed_eof()

    async def wait(self) -> int:
        with contextlib.suppress(BaseException):
            await asyncio.shield(self._task)
        return self.returncode if self.returncode is not None else 1

    def terminate(self) -> None:
        self._task.cancel()

    kill = terminate


class _AppStdio(StdioChannel):
    def __init__(self, app: McpApp, on_message: Any) -> None:
        super().__init__(["<in process>"], on_message)
        self.app = app

    async def open(self) -> None:
        self.proc = _ServedApp(self.app)  # type: ignore[assignment]
        loop = asyncio.get_running_loop()
        self._readers = [loop.create_task(self._read_stdout()), loop.create_task(self._read_stderr())]


class _StdioClient(Client):
    """A :class:`Client` of ``app`` over its stdio transport, in process."""

    def __init__(self, app: McpApp, **options: Any) -> None:
        super().__init__(["<in process>"], era="legacy", **options)
        self.served = app

    async def open(self) -> None:
        channel = _AppStdio(self.served, self._on_message)
        await channel.open()
        self._channel = channel


@pytest.fixture(params=WAYS)
def connect(request: pytest.FixtureRequest) -> Connect:
    """``connect(app, **client_options)``: an open :class:`Client` of ``app`` the way this run
    of the test comes in (see the module's docstring)."""
    way: str = request.param

    @contextlib.asynccontextmanager
    async def opened(app: McpApp, **options: Any) -> AsyncIterator[Client]:
        client: Client
        if way == "stdio":
            client = _StdioClient(app, **options)
        else:
            client = Client(app, era="legacy" if way == "http-2025" else "modern", **options)
        client.way = way  # type: ignore[attr-defined]
        async with client as c:
            yield c

    return opened
