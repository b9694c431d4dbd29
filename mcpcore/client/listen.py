"""Notifications the client asked for: ``subscriptions/listen`` (2026-07-28) or, on a 2025 session,
the GET stream (over stdio: the notifications the server writes between answers) with
``resources/subscribe`` for the URIs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import JsonRpcErrorCode, McpError
from .channels import StdioChannel

if TYPE_CHECKING:
    import httpx

    from .session import Session

__all__ = ["Subscription"]

_LIST_CHANGED = {"toolsListChanged": "notifications/tools/list_changed",
                 "promptsListChanged": "notifications/prompts/list_changed",
                 "resourcesListChanged": "notifications/resources/list_changed"}


class Subscription:
    """An open subscription: ``async with client.listen(...) as sub: async for note in sub``.

    ``honored`` is the filter the server agreed to (2026-07-28: its acknowledgement; a 2025 session:
    what its capabilities allow). Each item is a notification message (``method``, ``params``).
    """

    def __init__(self, session: Session, wanted: dict[str, Any]) -> None:
        self._s = session
        self.wanted = wanted
        self.honored: dict[str, Any] = {}
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._resp: httpx.Response | None = None
        self._reader: asyncio.Task[None] | None = None
        self._route: Any = None
        self._listen_id: Any = None
        self._closed = False
        self._done: asyncio.Future[dict[str, Any]] | None = None

    async def __aenter__(self) -> Subscription:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self

    async def __anext__(self) -> dict[str, Any]:
        while True:
            msg = await self._queue.get()
            if msg is None:
                self._queue.put_nowait(None)
                raise StopAsyncIteration
            if self._s.modern or self._wanted(msg):
                return msg

    async def next(self, seconds: float | None = None) -> dict[str, Any]:
        """The next notification, waiting at most ``seconds`` (then ``TimeoutError``)."""
        return await asyncio.wait_for(self.__anext__(), seconds)

    # -- opening ----------------------------------------------------------------------------------

    async def open(self) -> None:
        s = self._s
        channel = s._open_channel()
        if s.modern:
            params = s.envelope(s._with_tasks({"notifications": self.wanted}) if self.wanted.get("taskIds")
                                else {"notifications": self.wanted})
            if isinstance(channel, StdioChannel):
                rid = self._listen_id = next(s._ids)
                self._route = rid
                s._routes[rid] = self._queue
                self._done = done = channel.watch(rid)
                done.add_done_callback(self._ended)
                await channel.send({"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params})
            else:
                rid = self._listen_id = next(s._ids)
                body = {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params}
                self._resp, messages = await channel.events("POST", s.url, body,
                                                            s.headers("subscriptions/listen", params))
                self._reader = asyncio.get_running_loop().create_task(self._pump(messages))
            ack = await asyncio.wait_for(self._queue.get(), s.timeout)
            if ack is None or ack.get("method") != "notifications/subscriptions/acknowledged":
                raise McpError(JsonRpcErrorCode.InternalError,
                               f"the server did not acknowledge the subscription: {ack!r}")
            honored = (ack.get("params") or {}).get("notifications")
            self.honored = dict(honored) if isinstance(honored, dict) else {}
            return
        caps = s.server_capabilities
        self.honored = {k: True for k, v in self.wanted.items() if k in _LIST_CHANGED and v and
                        (caps.get(_LIST_CHANGED[k].split("/")[1]) or {}).get("listChanged")}
        uris = list(self.wanted.get("resourceSubscriptions") or [])
        if uris and (caps.get("resources") or {}).get("subscribe"):
            for uri in uris:
                await s.request("resources/subscribe", {"uri": uri})
            self.honored["resourceSubscriptions"] = uris
        if self.wanted.get("taskIds"):
            self.honored["taskIds"] = list(self.wanted["taskIds"])
        # The server's own notifications reach the session on whichever stream is open (the
        # stdio pipe, or the response stream of this session's request); others, over HTTP, on
        # the GET stream.
        self._route = None
        s._routes[None] = self._queue
        if isinstance(channel, StdioChannel):
            return
        h = s.headers()
        h["accept"] = "text/event-stream"
        h.pop("content-type", None)
        self._resp, messages = await channel.events("GET", s.url, None, h)
        self._reader = asyncio.get_running_loop().create_task(self._pump(messages))

    def _ended(self, done: asyncio.Future[dict[str, Any]]) -> None:
        if not done.cancelled():
            done.exception()  # retrieved: a server that exits ends the iteration, nothing more
        self._queue.put_nowait(None)

    async def _pump(self, messages: AsyncIterator[dict[str, Any]]) -> None:
        try:
            async for msg in messages:
                if "method" in msg and "id" not in msg:
                    self._queue.put_nowait(msg)
                elif "method" in msg:
                    self._s._on_message(msg)
                elif msg.get("id") == self._listen_id:
                    break
        except Exception:  # the stream broke: the iteration ends
            pass
        finally:
            self._queue.put_nowait(None)

    def _wanted(self, msg: dict[str, Any]) -> bool:
        method = msg.get("method")
        params = msg.get("params") or {}
        for key, name in _LIST_CHANGED.items():
            if method == name:
                return bool(self.honored.get(key))
        if method == "notifications/resources/updated":
            return params.get("uri") in (self.honored.get("resourceSubscriptions") or ())
        if method in ("notifications/tasks/status", "notifications/tasks"):
            return params.get("taskId") in (self.honored.get("taskIds") or ())
        return False

    # -- closing ----------------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop listening (close the stream; over stdio, cancel the listen request)."""
        if self._closed:
            return
        self._closed = True
        s = self._s
        s._routes.pop(self._route, None)
        if self._resp is not None:
            await self._resp.aclose()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        channel = s._channel
        if self._done is not None:
            self._done.cancel()
        if s.modern and isinstance(channel, StdioChannel):
            with contextlib.suppress(McpError):
                await channel.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": self._listen_id}})
        elif not s.modern and self.honored.get("resourceSubscriptions"):
            for uri in self.honored["resourceSubscriptions"]:
                with contextlib.suppress(McpError):
                    await s.request("resources/unsubscribe", {"uri": uri})
        self._queue.put_nowait(None)


def listen_filter(*, tools_list_changed: bool = False, prompts_list_changed: bool = False,
                  resources_list_changed: bool = False, resource_subscriptions: Sequence[str] = (),
                  task_ids: Sequence[str] = ()) -> dict[str, Any]:
    """The ``SubscriptionFilter`` of those arguments (only what is asked for)."""
    out: dict[str, Any] = {}
    if tools_list_changed:
        out["toolsListChanged"] = True
    if prompts_list_changed:
        out["promptsListChanged"] = True
    if resources_list_changed:
        out["resourcesListChanged"] = True
    if resource_subscriptions:
        out["resourceSubscriptions"] = list(resource_subscriptions)
    if task_ids:
        out["taskIds"] = list(task_ids)
    return out
