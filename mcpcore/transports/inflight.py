"""Requests in flight, the same for every transport.

- A request's first step runs inline: a handler that finishes without waiting is never
  registered anywhere, and pays for no task or watcher.
- One that waits is registered under its JSON-RPC id, so ``notifications/cancelled`` (2025) or
  a closed response stream (2026-07-28) cancels it.
- A request sent to the client (elicitation, sampling, roots) waits on a future keyed by its id;
  the client's answer settles it, whichever instance or stdin line it arrives on.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar

from ..asgi_types import Receive
from ..context import Inbound
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.jsonrpc import request_message, settle
from .live import InFlight, Live, LiveSessions

T = TypeVar("T")

__all__ = ["ask_client", "deliver", "next_unless_gone", "run_tracked",
           "run_watched", "tracked_rest", "until_disconnect", "watched_rest"]



async def run_tracked(coro: Coroutine[Any, Any, bytes], req: Inbound, where: Live | LiveSessions | None,
                      session_id: str | None = None) -> bytes | None:
    """Finish ``coro`` (the dispatcher's answer to ``req``), cancellable by id once it waits:
    registered in ``where`` (a connection's :class:`Live`, or the session ``session_id`` of
    ``where``, looked up only then); ``None`` when it was cancelled (its task is then not
    cancelled any more)."""
    try:
        step = coro.send(None)
    except StopIteration as done:
        result: bytes = done.value
        return result
    return await tracked_rest(coro, step, req, where, session_id)


async def tracked_rest(coro: Coroutine[Any, Any, bytes], step: Any, req: Inbound,
                       where: Live | LiveSessions | None, session_id: str | None = None) -> bytes | None:
    """:func:`run_tracked` once the first step ran and yielded ``step`` (a transport on the hot
    path runs that step itself, so a request that never waits costs no extra coroutine)."""
    rid = req.jsonrpc_id
    task = asyncio.current_task()
    entry = InFlight(task, req)
    live = where.get(session_id) if isinstance(where, LiveSessions) and session_id is not None else \
        where if isinstance(where, Live) else None
    if live is not None:
        live.inflight[rid] = entry
    try:
        return await _resume(coro, step)
    except asyncio.CancelledError:
        if entry.cancelled and task is not None and task.uncancel() == 0:
            return None
        raise
    finally:
        if live is not None and live.inflight.get(rid) is entry:
            del live.inflight[rid]


async def run_watched(coro: Coroutine[Any, Any, bytes], req: Inbound, receive: Receive) -> bytes | None:
    """Finish ``coro`` while watching the request stream (2026-07-28: closing it cancels the
    request); ``None`` when the client closed it. The watcher starts only if the handler waits."""
    try:
        step = coro.send(None)
    except StopIteration as done:
        result: bytes = done.value
        return result
    return await watched_rest(coro, step, req, receive)


async def watched_rest(coro: Coroutine[Any, Any, bytes], step: Any, req: Inbound, receive: Receive) -> bytes | None:
    """:func:`run_watched` once the first step ran and yielded ``step``."""
    owner = asyncio.current_task()
    entry = InFlight(owner, req)
    watcher = asyncio.get_running_loop().create_task(_watch_disconnect(receive, entry))
    try:
        return await _resume(coro, step)
    except asyncio.CancelledError:
        if entry.cancelled and owner is not None and owner.uncancel() == 0:
            return None
        raise
    finally:
        watcher.cancel()


@types.coroutine
def _resume(coro: Coroutine[Any, Any, bytes], step: Any) -> Generator[Any, Any, bytes]:
    """Await the rest of ``coro``, whose first step already ran and yielded ``step``."""
    while True:
        try:
            sent = yield step
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                step = coro.throw(exc)
            except StopIteration as done:
                result: bytes = done.value
                return result
        else:
            try:
                step = coro.send(sent)
            except StopIteration as done:
                result = done.value
                return result


async def next_unless_gone(get: Callable[[], Awaitable[T | None]], gone: asyncio.Task[None]) -> T | None:
    """The next item from ``get``, or ``None`` once ``gone`` (the client went away) finished
    first; a stream's loop ends on ``None`` either way."""
    getter = asyncio.ensure_future(get())
    done, _ = await asyncio.wait({getter, gone}, return_when=asyncio.FIRST_COMPLETED)
    if getter not in done:
        getter.cancel()
        return None
    return getter.result()


async def until_disconnect(receive: Receive) -> None:
    """Return once the client closed the request."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _watch_disconnect(receive: Receive, entry: InFlight) -> None:
    try:
        await until_disconnect(receive)
    except asyncio.CancelledError:
        return
    entry.cancel("the client closed the stream")


async def ask_client(live: Live, post: Callable[[dict[str, Any]], None], drain: Callable[[], Awaitable[None]],
                     method: str, params: dict[str, Any] | None, timeout_s: float) -> dict[str, Any]:
    """Send a request to the client through ``post`` and wait for its answer (settled by
    :func:`deliver`).

    Raises:
        McpError: the client answered with an error, did not answer within ``timeout_s``
            (``Timeout``), or went away.
    """
    rid = f"srv-{next(live.ids)}"
    fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    live.pending[rid] = fut
    try:
        post(request_message(rid, method, params))
        await drain()
        return await asyncio.wait_for(fut, timeout_s)
    except TimeoutError:
        raise McpError(JsonRpcErrorCode.Timeout, f"The client did not answer {method} in time.") from None
    finally:
        live.pending.pop(rid, None)


def deliver(live: Live | None, msg: Any) -> bool:
    """Apply a client's answer or ``notifications/cancelled`` to what waits in ``live``;
    whether it was found there (when not, a shared deployment hands it to the other instances)."""
    if live is None or type(msg) is not dict:
        return False
    if msg.get("method") == "notifications/cancelled":
        raw = msg.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        flight = live.inflight.get(params.get("requestId"))
        if flight is None:
            return False
        reason = params.get("reason")
        flight.cancel(reason if type(reason) is str else "cancelled by the client")
        return True
    fut = live.pending.get(str(msg.get("id")))
    if fut is None or fut.done():
        return False
    settle(fut, msg)
    return True
