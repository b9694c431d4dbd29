"""``Client``: an MCP client for both protocol eras, over streamable HTTP or stdio."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import JsonRpcErrorCode, McpError
from .channels import HttpChannel
from .listen import Subscription, listen_filter
from .session import TASKS_EXTENSION, Session

__all__ = ["TASKS_EXTENSION", "Client", "task_of"]

_TERMINAL = frozenset({"completed", "failed", "cancelled"})
_progress_tokens = itertools.count(1)

ProgressCallback = Callable[[float, float | None, str | None], Any]


def task_of(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The task a ``tools/call`` answered with (``taskId``, ``status``, ...), in either era's
    shape, or ``None`` for an ordinary result."""
    if result.get("resultType") == "task" and isinstance(result.get("taskId"), str):
        return dict(result)
    task = result.get("task")
    if isinstance(task, dict) and isinstance(task.get("taskId"), str):
        return dict(task)
    return None


class Client(Session):
    """A supported MCP client: both eras, streamable HTTP (a URL, or an app in process) or stdio.

    Example::

        async with Client("http://127.0.0.1:8000/mcp") as client:     # the era is discovered
            tools = await client.list_tools()
            result = await client.call_tool("search", {"query": "red"})

        async with Client(["python", "-m", "mcpcore", "run", "server:app", "--transport", "stdio"],
                          on_elicit=lambda params: {"action": "accept", "content": {"ok": True}}) as client:
            ...

    ``target`` is an ``http(s)://`` URL, an ASGI app (an :class:`~mcpcore.McpApp` is served in
    process and started when it is not running), or a command list (a stdio server).
    ``era``: ``"auto"`` (``server/discover`` of 2026-07-28, else the 2025 ``initialize``),
    ``"modern"`` or ``"legacy"``. Results are the wire's JSON objects (dicts); a failure is an
    :class:`~mcpcore.McpError` with ``code``, ``message`` and ``data``.

    The server's questions (elicitation, sampling, roots) are answered by ``on_elicit``,
    ``on_sample``, ``on_roots`` (or ``handlers[method]``): each gets the request's ``params``
    and returns its result. On a 2025 session they answer the server's requests; on 2026-07-28
    they answer ``input_required`` results, and the call is retried with the answers and the
    ``requestState``. The client declares the capabilities of the handlers it has unless
    ``capabilities=`` says otherwise. ``on_log`` gets each ``notifications/message``'s params
    (``log_level`` asks for them); ``auth`` is a bearer token, :class:`~mcpcore.client.OAuth` (sign in
    where the server asks, docs/client.md) or an ``httpx.Auth``.
    """

    async def __aenter__(self) -> Client:
        await self.open()
        try:
            await self.connect()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def with_rounds(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``request``, answering ``input_required`` results (2026-07-28) with the handlers and
        retrying, up to ``max_rounds`` times. A result asking for something no handler answers
        is returned as it is."""
        result = await self.request(method, params)
        rounds = 0
        while result.get("resultType") == "input_required" and self.answers_input_required:
            asks = result.get("inputRequests") or {}
            if not isinstance(asks, dict) or any(
                    not isinstance(r, dict) or r.get("method") not in self.handlers for r in asks.values()):
                return result
            rounds += 1
            if rounds > self.max_rounds:
                raise McpError(JsonRpcErrorCode.InternalError, f"{method} still asked for input after "
                               f"{self.max_rounds} rounds (raise max_rounds= if that is expected)")
            keys = list(asks)
            answers = await asyncio.gather(*(self.answer(asks[k]["method"], asks[k].get("params") or {})
                                             for k in keys))
            retry = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
            if keys:
                retry["inputResponses"] = dict(zip(keys, answers, strict=True))
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            result = await self.request(method, retry)
        return result

    # -- listing ----------------------------------------------------------------------------------

    async def _all_pages(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(10_000):
            page = await self.request(method, {"cursor": cursor} if cursor else None)
            items.extend(x for x in page.get(key) or [] if isinstance(x, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                return items
        raise McpError(JsonRpcErrorCode.InternalError, f"{method} returned more than 10000 pages")

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool (all pages of ``tools/list``)."""
        return await self._all_pages("tools/list", "tools")

    async def list_prompts(self) -> list[dict[str, Any]]:
        """Every prompt (all pages of ``prompts/list``)."""
        return await self._all_pages("prompts/list", "prompts")

    async def list_resources(self) -> list[dict[str, Any]]:
        """Every resource (all pages of ``resources/list``)."""
        return await self._all_pages("resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        """Every resource template (all pages of ``resources/templates/list``)."""
        return await self._all_pages("resources/templates/list", "resourceTemplates")

    # -- calling ----------------------------------------------------------------------------------

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                        task: bool | Mapping[str, Any] | None = None, on_progress: ProgressCallback | None = None,
                        progress_token: str | int | None = None, **params: Any) -> dict[str, Any]:
        """Call a tool; returns the ``CallToolResult`` (``isError`` for a tool error).

        Args:
            task: ask for a task (``True``, or ``{"ttl": ms}``): 2026-07-28 declares the tasks
                extension on this call (the server decides), 2025-11-25 sends ``params.task``.
                When the server answers with a task, the result is the task's creation result
                (read it with :func:`task_of`, then :meth:`wait_task`).
            on_progress: called with ``(progress, total, message)`` for each progress
                notification of this call.
            params: further request params as the wire spells them (``inputResponses``, ...).
        """
        p: dict[str, Any] = {"name": name, **params}
        if arguments is not None:
            p["arguments"] = dict(arguments)
        if task is not None and task is not False:
            if self.modern:
                p = self._with_tasks(p)
            else:
                p["task"] = dict(task) if isinstance(task, Mapping) else {}
        token = progress_token
        if on_progress is not None and token is None:
            token = f"progress-{next(_progress_tokens)}"
        if token is not None:
            p["_meta"] = {**(p.get("_meta") or {}), "progressToken": token}
        if on_progress is not None:
            self._progress[token] = on_progress
        try:
            return await self.with_rounds("tools/call", p)
        finally:
            if on_progress is not None:
                self._progress.pop(token, None)

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None, **params: Any) -> dict[str, Any]:
        """Get a prompt (``prompts/get``), answering its questions as :meth:`call_tool` does."""
        p: dict[str, Any] = {"name": name, **params}
        if arguments is not None:
            p["arguments"] = dict(arguments)
        return await self.with_rounds("prompts/get", p)

    async def read_resource(self, uri: str, **params: Any) -> dict[str, Any]:
        """Read a resource (``resources/read``), answering its questions as :meth:`call_tool` does."""
        return await self.with_rounds("resources/read", {"uri": uri, **params})

    async def complete(self, ref: Mapping[str, Any], argument: str, value: str, *,
                       context: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``completion/complete``: suggestions for ``argument`` of a prompt
        (``{"type": "ref/prompt", "name": ...}``) or a resource template
        (``{"type": "ref/resource", "uri": ...}``); returns the ``completion`` object."""
        params: dict[str, Any] = {"ref": dict(ref), "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": dict(context)}
        result = await self.request("completion/complete", params)
        completion = result.get("completion")
        return dict(completion) if isinstance(completion, dict) else {}

    async def ping(self) -> None:
        """``ping`` (2025 era; 2026-07-28 removed it: a ``server/discover`` stands in)."""
        if self.modern:
            await self.request("server/discover")
        else:
            await self.request("ping")

    async def set_log_level(self, level: str) -> None:
        """Ask for log messages at ``level`` and above: ``logging/setLevel`` on a 2025 session,
        the per-request level on 2026-07-28."""
        self.log_level = level
        if not self.modern:
            await self.request("logging/setLevel", {"level": level})

    async def server_card(self) -> dict[str, Any] | None:
        """The server card (``/.well-known/mcp.json`` beside the endpoint, else at the root), or
        ``None`` when the server publishes none (or this is stdio)."""
        if not isinstance(self._channel, HttpChannel):
            return None
        base = self.url.rsplit("/", 1)[0]
        root = "/".join(self.url.split("/", 3)[:3])
        for url in dict.fromkeys((f"{base}/.well-known/mcp.json", f"{root}/.well-known/mcp.json")):
            resp = await self.http.get(url, headers=self.extra_headers)
            if resp.status_code == 200 and resp.headers.get("content-type", "").startswith("application/json"):
                card = resp.json()
                return dict(card) if isinstance(card, dict) else None
        return None

    # -- tasks ------------------------------------------------------------------------------------

    async def get_task(self, task_id: str) -> dict[str, Any]:
        """``tasks/get``: the task's status (and, 2026-07-28, its questions and outcome)."""
        return await self.request("tasks/get", self._with_tasks({"taskId": task_id}))

    async def update_task(self, task_id: str, input_responses: Mapping[str, Any]) -> None:
        """``tasks/update`` (2026-07-28): answer the questions of a task in ``input_required``."""
        await self.request("tasks/update", self._with_tasks({"taskId": task_id,
                                                              "inputResponses": dict(input_responses)}))

    async def cancel_task(self, task_id: str) -> dict[str, Any]:
        """``tasks/cancel``: ask the server to stop the task."""
        return await self.request("tasks/cancel", self._with_tasks({"taskId": task_id}))

    async def list_tasks(self) -> list[dict[str, Any]]:
        """Every task of this caller (``tasks/list``, 2025-11-25 only)."""
        return await self._all_pages("tasks/list", "tasks")

    async def wait_task(self, task_id: str, *, on_status: Callable[[dict[str, Any]], Any] | None = None,
                        poll: float | None = None) -> dict[str, Any]:
        """Wait for the task to end and return its ``CallToolResult``.

        2026-07-28: polls ``tasks/get`` (every ``pollIntervalMs``, or ``poll`` seconds), answering
        ``input_required`` questions with the handlers through ``tasks/update``. 2025-11-25:
        ``tasks/result``, which waits on the server; its questions arrive as requests.
        ``on_status`` gets each status seen. A ``failed`` task raises its error as
        :class:`~mcpcore.McpError`; a ``cancelled`` one raises ``RequestCancelled``.
        """
        if not self.modern:
            return await self.request("tasks/result", {"taskId": task_id})
        answered: set[str] = set()
        while True:
            task = await self.get_task(task_id)
            if on_status is not None:
                out = on_status(task)
                if asyncio.iscoroutine(out):
                    await out
            status = task.get("status")
            if status == "completed":
                result = task.get("result")
                return dict(result) if isinstance(result, dict) else {}
            if status == "failed":
                raw = task.get("error")
                e: dict[str, Any] = raw if isinstance(raw, dict) else {}
                raise McpError(e.get("code", JsonRpcErrorCode.InternalError), e.get("message", "The task failed."),
                               e.get("data"))
            if status == "cancelled":
                raise McpError(JsonRpcErrorCode.RequestCancelled, f"The task {task_id} was cancelled.")
            asks = {k: v for k, v in (task.get("inputRequests") or {}).items() if k not in answered}
            if status == "input_required" and asks:
                if any(not isinstance(r, dict) or r.get("method") not in self.handlers for r in asks.values()):
                    raise McpError(JsonRpcErrorCode.InvalidRequest, f"The task {task_id} asks for "
                                   f"{sorted({r.get('method') for r in asks.values()})}, which this client has no "
                                   "handler for.")
                keys = list(asks)
                answers = await asyncio.gather(*(self.answer(asks[k]["method"], asks[k].get("params") or {})
                                                 for k in keys))
                await self.update_task(task_id, dict(zip(keys, answers, strict=True)))
                answered.update(keys)
                continue
            interval = task.get("pollIntervalMs")
            await asyncio.sleep(poll if poll is not None else
                                min(max(interval / 1000, 0.05), 5.0) if isinstance(interval, (int, float)) else 0.5)

    # -- notifications ----------------------------------------------------------------------------

    def listen(self, *, tools_list_changed: bool = False, prompts_list_changed: bool = False,
               resources_list_changed: bool = False, resource_subscriptions: Sequence[str] = (),
               task_ids: Sequence[str] = ()) -> Subscription:
        """Subscribe to change notifications: ``async with client.listen(...) as sub:``, then
        ``async for note in sub``. 2026-07-28: ``subscriptions/listen``; a 2025 session: the GET
        stream (stdio: the server's unsolicited notifications) and ``resources/subscribe``."""
        return Subscription(self, listen_filter(
            tools_list_changed=tools_list_changed, prompts_list_changed=prompts_list_changed,
            resources_list_changed=resources_list_changed, resource_subscriptions=resource_subscriptions,
            task_ids=task_ids))
