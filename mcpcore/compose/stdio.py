"""A proxied MCP server run as a command and spoken to over stdio: one process per caller identity.

A stdio server keeps state per connection (a 2025 server: the client's capabilities, its log level,
its subscriptions, whatever its tools remember), and stdio tells nothing about who calls. So each
caller identity (the key of :func:`~.messages.caller_key`) gets its own process, started on its
first call, closed after ``idle_s`` without calls, at most ``max_processes`` at once (the least
recently used idle one is closed to make room; when every one is busy a new caller waits). The
proxy's own requests (lists, subscriptions) have a process of their own, whose list changes and
resource updates feed the proxy's notification stream (a 2026-07-28 server's lists are refreshed on
a timer instead).

What the server sends during a call reaches the caller of that call:

- progress: by its ``progressToken``;
- log messages and the server's questions (elicitation, sampling, roots), which carry no reference
  to a request on stdio: the one call in flight on that caller's process. While the same caller
  has several calls in flight there, a log message is dropped and a question is refused (the
  server gets an error), since the wire cannot say which call it belongs to. A 2026-07-28 server
  asks through its results (``input_required``), which always belong to their call.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..client import Client
from ..client.channels import StdioChannel
from ..errors import ConfigurationError, JsonRpcErrorCode, McpError
from ..protocol.versions import META_CLIENT_CAPABILITIES, META_LOG_LEVEL
from .backend import CONNECTION_META, BackendUnavailable, Relay
from .messages import caller_key, capabilities_for, wants_tasks

if TYPE_CHECKING:
    from ..context import Inbound

__all__ = ["StdioBackend", "pool_options"]

log = logging.getLogger("mcpcore.compose")

_EVENTS = frozenset({"notifications/tools/list_changed", "notifications/prompts/list_changed",
                     "notifications/resources/list_changed", "notifications/resources/updated"})
_QUESTIONS = ("elicitation/create", "sampling/createMessage", "roots/list")
_OWN = "\0proxy"
"""The key of the proxy's own process."""


async def _nothing(msg: dict[str, Any]) -> dict[str, Any] | None:
    return None


class _Process:
    """One server process and its connection, serving one caller identity (or the proxy itself)."""

    def __init__(self, backend: StdioBackend, key: str, capabilities: dict[str, Any]) -> None:
        self.backend = backend
        self.key = key
        self.client = Client(list(backend.command), era=backend.era, env=backend.env, cwd=backend.cwd,
                             timeout=backend.timeout, client_info={"name": "mcpcore-proxy", "version": "1.0"},
                             capabilities=capabilities, handlers={m: self._asker(m) for m in _QUESTIONS},
                             on_notification=self._notified)
        self.inflight: dict[int, Relay] = {}
        self.tokens: dict[Any, Relay] = {}
        self.used = time.monotonic()
        self.started = False

    def gone(self) -> bool:
        channel = self.client._channel
        return not isinstance(channel, StdioChannel) or channel.proc is None or channel.proc.returncode is not None

    async def start(self) -> None:
        try:
            await self.client.__aenter__()
        except (McpError, OSError) as exc:
            await self.client.close()
            raise BackendUnavailable(f"{self.backend.name}: {exc}") from exc
        self.started = True
        if self.client.era == "legacy":
            self.backend.initializes += 1
            if self.key != _OWN and "logging" in self.client.server_capabilities:  # every level: filtered per caller
                with contextlib.suppress(McpError):
                    await self.client.request("logging/setLevel", {"level": "debug"})

    async def close(self) -> None:
        if self.started:
            self.started = False
            await self.client.close()

    def _only(self) -> Relay | None:
        """The relay of the one call in flight (``None``: none, or several)."""
        return next(iter(self.inflight.values())) if len(self.inflight) == 1 else None

    def _asker(self, method: str) -> Any:
        async def ask(params: dict[str, Any]) -> dict[str, Any]:
            relay = self._only()
            if relay is None:
                n = len(self.inflight)
                raise McpError(JsonRpcErrorCode.InternalError, f"the proxy cannot tell which call asks {method}: "
                               f"{n} calls are in flight on this connection" if n else
                               f"the proxy has no call in flight to ask {method} through")
            return await relay({"jsonrpc": "2.0", "id": 0, "method": method, "params": params}) or {}
        return ask

    def _notified(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        raw = msg.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        relay: Relay | None = None
        if method == "notifications/progress":
            relay = self.tokens.get(params.get("progressToken"))
        elif method == "notifications/message":
            relay = self._only()
            if relay is None:
                self.backend.unattributed += 1
                log.debug("%s: a log message with %d calls in flight is dropped", self.backend.name, len(self.inflight))
        elif method in _EVENTS and self.key == _OWN:
            with contextlib.suppress(asyncio.QueueFull):
                self.backend.events_queue.put_nowait(msg)
        if relay is not None:
            self.backend.spawn(relay(msg))

    async def request(self, method: str, params: dict[str, Any], relay: Relay) -> dict[str, Any]:
        rid = next(self.backend.ids)
        token = (params.get("_meta") or {}).get("progressToken")
        self.inflight[rid] = relay
        if token is not None:
            self.tokens[token] = relay
        self.used = time.monotonic()
        try:
            return await self.client.request(method, params, request_id=rid)
        except asyncio.CancelledError:  # the caller went away: tell the server
            self.backend.spawn(self._cancelled(rid))
            raise
        finally:
            self.inflight.pop(rid, None)
            if token is not None:
                self.tokens.pop(token, None)
            self.used = time.monotonic()
            self.backend.freed()

    async def _cancelled(self, rid: int) -> None:
        with contextlib.suppress(McpError):
            await self.client.notify("notifications/cancelled", {"requestId": rid, "reason": "the caller cancelled"})


def pool_options(max_processes: Any, idle_s: Any, *, stdio: bool) -> dict[str, Any]:
    """``proxy(..., max_processes=, idle_s=)`` checked: positive, and for a stdio command only."""
    given = {k: v for k, v in (("max_processes", max_processes), ("idle_s", idle_s)) if v is not None}
    if given and not stdio:
        raise ConfigurationError(f"proxy({', '.join(given)}=...) sizes the process pool of a stdio command; "
                                 "an http(s) backend has none")
    if "max_processes" in given and (type(max_processes) is not int or max_processes < 1):
        raise ConfigurationError(f"proxy(max_processes=) must be a whole number of processes, 1 or more; "
                                 f"got {max_processes!r}")
    if "idle_s" in given and (isinstance(idle_s, bool) or not isinstance(idle_s, (int, float))
                              or not 0 < idle_s < float("inf")):
        raise ConfigurationError(f"proxy(idle_s=) must be a number of seconds above 0; got {idle_s!r}")
    return given


class StdioBackend:
    """``command`` as a backend: a process per caller identity, and the proxy's own, started on
    first use (the proxy's with the proxy) and again when one exits."""

    def __init__(self, command: Sequence[str], *, name: str, era: str = "auto", env: Mapping[str, str] | None = None,
                 cwd: str | None = None, timeout: float = 60.0, max_processes: int = 16,
                 idle_s: float = 300.0) -> None:
        if max_processes < 1:
            raise ValueError("max_processes must be at least 1")
        self.command = list(command)
        self.name = name
        self.era = era
        self.env = env
        self.cwd = cwd
        self.timeout = timeout
        self.max_processes = max_processes
        self.idle_s = idle_s
        self.initializes = 0
        """2025 ``initialize`` handshakes made (one per process started)."""
        self.unattributed = 0
        """Log messages dropped because several calls of one caller were in flight."""
        self.ids = itertools.count(1)
        self.events_queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=1000)
        self.processes: dict[str, _Process] = {}
        """The callers' processes by caller key, least recently opened first."""
        self.own: _Process | None = None
        self._opening: dict[str, asyncio.Future[_Process]] = {}
        self._room = asyncio.Event()
        self._tasks: set[asyncio.Future[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None

    @property
    def client(self) -> Client:
        """The client of the proxy's own process."""
        if self.own is None:
            raise BackendUnavailable(f"{self.name}: not started")
        return self.own.client

    async def start(self) -> None:
        if self.own is not None and self.own.started and not self.own.gone():
            return
        if self.own is not None:
            await self.own.close()
        self.own = _Process(self, _OWN, {})
        await self.own.start()
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        procs, self.processes = list(self.processes.values()), {}
        if self.own is not None:
            procs.append(self.own)
            self.own = None
        for p in procs:
            await p.close()

    async def era_of(self, req: Inbound | None = None) -> str:
        return self.client.era

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def freed(self) -> None:
        self._room.set()

    async def _process(self, req: Inbound | None) -> _Process:
        """The process serving ``req``'s caller (the proxy's own for ``None``), started if need be."""
        if req is None:
            if self.own is None or not self.own.started or self.own.gone():
                await self.start()
            assert self.own is not None
            return self.own
        key = caller_key(req)
        found = self.processes.get(key)
        if found is not None and found.started and not found.gone():
            return found
        opening = self._opening.get(key)
        if opening is not None:
            return await asyncio.shield(opening)
        fut: asyncio.Future[_Process] = asyncio.get_running_loop().create_future()
        self._opening[key] = fut
        try:
            if found is not None:  # it exited: run it again
                self.processes.pop(key, None)
                await found.close()
            await self._make_room(key)
            proc = _Process(self, key, capabilities_for(req))
            self.processes[key] = proc
            try:
                await proc.start()
            except BaseException:
                self.processes.pop(key, None)
                raise
            fut.set_result(proc)
            return proc
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: a caller that waits on it gets it; none may
            raise
        finally:
            self._opening.pop(key, None)

    async def _make_room(self, key: str) -> None:
        """Wait until ``key``'s process may start: fewer than ``max_processes`` others, running or starting."""
        deadline = time.monotonic() + self.timeout
        while len((self.processes.keys() | self._opening.keys()) - {key}) >= self.max_processes:
            idle = [p for k, p in self.processes.items() if not p.inflight and k not in self._opening]
            if idle:
                victim = min(idle, key=lambda p: p.used)
                self.processes.pop(victim.key, None)
                await victim.close()
                continue
            self._room.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise BackendUnavailable(f"{self.name}: all {self.max_processes} stdio processes are busy")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), left)

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(max(min(self.idle_s / 4, 5.0), 0.05))
            now = time.monotonic()
            for key, p in list(self.processes.items()):
                if not p.inflight and now - p.used >= self.idle_s and key not in self._opening:
                    self.processes.pop(key, None)
                    await p.close()

    async def request(self, method: str, params: Mapping[str, Any], req: Inbound | None,
                      relay: Relay = _nothing) -> dict[str, Any]:
        """``method`` on the server, in the process of ``req``'s caller; what the server sends during
        the call goes to ``relay``."""
        proc = await self._process(req)
        sent = dict(params)
        meta = {k: v for k, v in (sent.get("_meta") or {}).items() if k not in CONNECTION_META}
        if req is not None and proc.client.modern:
            meta[META_CLIENT_CAPABILITIES] = capabilities_for(req, wants_tasks(method, params, req))
            meta[META_LOG_LEVEL] = "debug"  # every level: the proxy filters per caller
        sent["_meta"] = meta
        try:
            return await proc.request(method, sent, relay)
        except McpError as exc:
            if proc.gone():
                raise BackendUnavailable(f"{self.name}: {exc.message}") from exc
            raise

    async def notify(self, method: str, params: Mapping[str, Any], req: Inbound | None) -> None:
        proc = self.own if req is None else self.processes.get(caller_key(req))
        if proc is not None:
            with contextlib.suppress(McpError):
                await proc.client.notify(method, params)

    @contextlib.asynccontextmanager
    async def events(self, wanted: dict[str, Any]) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """The list changes and resource updates of the proxy's own process (a 2025 server: after
        subscribing to ``wanted["resourceSubscriptions"]``)."""
        own = await self._process(None)
        if own.client.era != "legacy":  # a 2026-07-28 server tells only listen streams: lists are refreshed
            raise McpError(JsonRpcErrorCode.MethodNotFound, f"{self.name}: listen over stdio is not relayed")
        for uri in wanted.get("resourceSubscriptions") or ():
            with contextlib.suppress(McpError):
                await own.client.request("resources/subscribe", {"uri": uri})

        async def messages() -> AsyncIterator[dict[str, Any]]:
            while own.started and not own.gone():
                yield await self.events_queue.get()

        yield messages()
