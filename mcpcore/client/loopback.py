"""The person's part of an OAuth sign-in from a program on their machine (RFC 8252): a redirect
listener on ``127.0.0.1`` at a random port, the browser opened on the authorization URL (or the
URL printed when there is none), and the wait for the browser to come back."""

from __future__ import annotations

import asyncio
import contextlib
import html
import os
import shlex
import sys
import webbrowser
from collections.abc import Callable
from urllib.parse import parse_qsl, urlsplit

__all__ = ["BROWSER_ENV", "LoopbackRedirect"]

BROWSER_ENV = "MCPCORE_OAUTH_BROWSER"
"""A command that opens the authorization URL (given as its last argument) instead of the
system's browser; ``none`` only prints the URL."""

_PAGE = ("<!doctype html><meta charset=utf-8><title>{title}</title>"
         "<body style='font-family:sans-serif;margin:3em'><h1>{title}</h1><p>{text}</p></body>")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class LoopbackRedirect:
    """Receives the authorization response at ``http://127.0.0.1:PORT/callback``.

    Args:
        timeout: how long to wait for the browser to come back, in seconds.
        browser: a command opening the URL (its last argument); ``"none"`` only prints it; unset:
            ``$MCPCORE_OAUTH_BROWSER``, else the system's browser (:mod:`webbrowser`).
        notify: where the lines for the person go (stderr by default).
        port: the port to listen on (``0``, the default: any free one).
    """

    def __init__(self, *, timeout: float = 300.0, browser: str | None = None,
                 notify: Callable[[str], None] | None = None, port: int = 0) -> None:
        self.timeout = timeout
        self.browser = browser if browser is not None else os.environ.get(BROWSER_ENV)
        self.notify = notify or _stderr
        self.port = port
        self._requested_port = port
        self._server: asyncio.Server | None = None
        self._answer: asyncio.Future[dict[str, str]] | None = None
        self._state = ""
        self._procs: list[asyncio.subprocess.Process] = []

    @property
    def redirect_uri(self) -> str:
        """The redirect URI (after :meth:`start`)."""
        if self._server is None:
            raise RuntimeError("the loopback listener is not started")
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self) -> str:
        """Listen (once) and return the redirect URI."""
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
            self.port = self._server.sockets[0].getsockname()[1]
        return self.redirect_uri

    async def close(self) -> None:
        """Stop listening; wait a little for a browser command this started."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None
            self.port = self._requested_port
        for proc in self._procs:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
        self._procs.clear()

    async def authorize(self, url: str, state: str) -> dict[str, str]:
        """Send the person to ``url`` and return the query the browser comes back with."""
        await self.start()
        self._state = state
        self._answer = asyncio.get_running_loop().create_future()
        await self._open(url)
        try:
            return await asyncio.wait_for(asyncio.shield(self._answer), self.timeout)
        except TimeoutError:
            raise TimeoutError(f"nobody signed in within {self.timeout:g} s: run it again and finish the sign-in "
                               "in the browser") from None
        finally:
            self._answer = None

    async def _open(self, url: str) -> None:
        command = (self.browser or "").strip()
        if command.lower() == "none":
            self.notify(f"Open this URL in a browser to sign in:\n  {url}")
            return
        if command:
            try:
                proc = await asyncio.create_subprocess_exec(*shlex.split(command), url,
                                                            stdin=asyncio.subprocess.DEVNULL)
            except (OSError, ValueError) as exc:
                self.notify(f"Cannot run {BROWSER_ENV}={command!r} ({exc}); open this URL in a browser to sign in:"
                            f"\n  {url}")
                return
            self._procs.append(proc)
            self.notify(f"Signing in through {shlex.split(command)[0]}; if nothing opens, visit:\n  {url}")
            return
        opened = await asyncio.to_thread(webbrowser.open, url)
        self.notify(f"{'Opened your browser to sign in; if it did not open' if opened else 'No browser here'}, "
                    f"visit:\n  {url}")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, target, *_ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            parts = urlsplit(target)
            query = dict(parse_qsl(parts.query, keep_blank_values=True))
            if method != "GET" or parts.path != "/callback":
                await self._reply(writer, 404, "Not here", "This address only receives a sign-in.")
                return
            waiting = self._answer is not None and not self._answer.done()
            if not waiting:
                await self._reply(writer, 409, "No sign-in is waiting", "Start it again from the program.")
            elif query.get("state") != self._state:
                await self._reply(writer, 400, "Sign-in refused",
                                  "This answer is not for the sign-in the program started (its state differs). "
                                  "Start it again from the program.")
            elif "error" in query:
                await self._reply(writer, 400, "Sign-in refused",
                                  f"{query['error']}: {query.get('error_description', '')}")
            else:
                await self._reply(writer, 200, "Signed in", "You can close this tab and go back to the program.")
            if waiting and self._answer is not None and not self._answer.done():
                self._answer.set_result(query)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, OSError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, status: int, title: str, text: str) -> None:
        body = _PAGE.format(title=html.escape(title), text=html.escape(text)).encode()
        writer.write(f"HTTP/1.1 {status} {title}\r\ncontent-type: text/html; charset=utf-8\r\n"
                     f"content-length: {len(body)}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n"
                     .encode("latin-1") + body)
        await writer.drain()
