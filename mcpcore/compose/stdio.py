"""A proxied MCP server run as a subprocess and spoken to over stdio.

One process, one connection (a stdio server has one session): every caller's requests share it.
Progress reaches the caller whose progress token it carries; a 2025 server's list changes and
resource updates feed the proxy's notification stream (a 2026-07-28 server's lists are refreshed on
a timer). What stdio cannot attribute to one
request (log messages, the server's questions) does not reach a caller.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..client import Client
from ..client.channels import StdioChannel
from ..errors import JsonRpcErrorCode, McpError
from .backend import CONNECTION_META, BackendUnavailable, Relay

if TYPE_CHECKING:
    from ..context import Inbound

__all__ = ["StdioBackend"]

_EVENTS = frozenset({"notifications/tools/list_changed", "notifications/prompts/list_changed",
                     "notifications/resources/list_changed", "notifications/resources/updated"})


async def _nothing(msg: dict[str, Any]) -> dict[str, Any] | None:
    return None


class StdioBackend:
    """``command`` as a backend: started with the proxy, stopped with it."""

    def __init__(self, command: Sequence[str], *, name: str, era: str = "auto", env: Mapping[str, str] | None = None,
                 cwd: str | None = None, timeout: float = 60.0) -> None:
        self.name = name
        self.client = Client(list(command), era=era, env=env, cwd=cwd, timeout=timeout,
                             client_info={"name": "mcpcore-proxy", "version": "1.0"},
                             on_notification=self._notified)
        self.initializes = 0
        self._relays: dict[Any, Relay] = {}
        self._events: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=1000)
        self._started = False
        self._tasks: set[asyncio.Future[Any]] = set()

    async def start(self) -> None:
        if self._started:
            return
        try:
            await self.client.__aenter__()
        except (McpError, OSError) as exc:
            raise BackendUnavailable(f"{self.name}: {exc}") from exc
        self._started = True
        self.initializes += self.client.era == "legacy"

    async def close(self) -> None:
        if self._started:
            self._started = False
            await self.client.close()

    async def era_of(self, req: Inbound | None = None) -> str:
        return self.client.era

    def _gone(self) -> bool:
        channel = self.client._channel
        return not isinstance(channel, StdioChannel) or channel.proc is None or channel.proc.returncode is not None

    async def request(self, method: str, params: Mapping[str, Any], req: Inbound | None,
                      relay: Relay = _nothing) -> dict[str, Any]:
        """``method`` on the server; progress with the caller's token goes to ``relay``."""
        if not self._started or self._gone():  # (re)start it: a stdio server that exited is run again
            await self.close()
            await self.start()
        sent = dict(params)
        meta = {k: v for k, v in (sent.get("_meta") or {}).items() if k not in CONNECTION_META}
        sent["_meta"] = meta
        token = meta.get("progressToken")
        if token is not None:
            self._relays[token] = relay
        try:
            return await self.client.request(method, sent)
        except McpError as exc:
            if self._gone():
                raise BackendUnavailable(f"{self.name}: {exc.message}") from exc
            raise
        finally:
            if token is not None:
                self._relays.pop(token, None)

    async def notify(self, method: str, params: Mapping[str, Any], req: Inbound | None) -> None:
        with contextlib.suppress(McpError):
            await self.client.notify(method, params)

    def _notified(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method == "notifications/progress":
            relay = self._relays.get((msg.get("params") or {}).get("progressToken"))
            if relay is not None:
                task = asyncio.ensure_future(relay(msg))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        elif method in _EVENTS:
            with contextlib.suppress(asyncio.QueueFull):
                self._events.put_nowait(msg)

    @contextlib.asynccontextmanager
    async def events(self, wanted: dict[str, Any]) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """The server's list changes and resource updates (a 2025 server: after subscribing to
        ``wanted["resourceSubscriptions"]``)."""
        if self.client.era != "legacy":  # a 2026-07-28 server tells only listen streams: lists are refreshed
            raise McpError(JsonRpcErrorCode.MethodNotFound, f"{self.name}: listen over stdio is not relayed")
        for uri in wanted.get("resourceSubscriptions") or ():
            with contextlib.suppress(McpError):
                await self.client.request("resources/subscribe", {"uri": uri})

        async def messages() -> AsyncIterator[dict[str, Any]]:
            while self._started and not self._gone():
                yield await self._events.get()

        yield messages()
