"""``subscriptions/listen`` (2026-07-28): a long-lived stream of the change notifications a
client asked for, fed by the bus."""

from __future__ import annotations

from typing import Any

from ..bus.base import BusEvent
from ..context import Inbound
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.limits import MAX_URI
from ..protocol.versions import META_SUBSCRIPTION_ID
from ..queues import BoundedQueue
from ..sessions.streams import caller_of
from .core import ListenTopic, ServerCore
from .notify import notification_for, reaches
from .visibility import ViewTracker

__all__ = ["ListenTopic", "honored_filter", "listen"]


def honored_filter(requested: Any, capabilities: dict[str, Any], max_subscriptions: int = 100) -> dict[str, Any]:
    """The part of a ``SubscriptionFilter`` this server honours (unsupported types omitted);
    at most ``max_subscriptions`` resource URIs may be asked for."""
    if requested is None:
        requested = {}
    if type(requested) is not dict:
        raise McpError(JsonRpcErrorCode.InvalidParams, '"notifications" must be an object.')
    out: dict[str, Any] = {}
    for key, cap in (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"),
                     ("resourcesListChanged", "resources")):
        v = requested.get(key)
        if v is not None and type(v) is not bool:
            raise McpError(JsonRpcErrorCode.InvalidParams, f'"{key}" must be a boolean.')
        if v and cap in capabilities:
            out[key] = True
    subs = requested.get("resourceSubscriptions")
    if subs is not None:
        if type(subs) is not list or not all(type(u) is str for u in subs):
            raise McpError(JsonRpcErrorCode.InvalidParams, '"resourceSubscriptions" must be a list of URIs.')
        if len(subs) > max_subscriptions or any(len(u) > MAX_URI for u in subs):
            raise McpError(JsonRpcErrorCode.InvalidParams, f'"resourceSubscriptions" holds at most {max_subscriptions} '
                           f"URIs of at most {MAX_URI} characters.", {"reason": "too_many_subscriptions"})
        if capabilities.get("resources", {}).get("subscribe"):
            out["resourceSubscriptions"] = list(dict.fromkeys(subs))
    return out


def _wanted(event: BusEvent, honored: dict[str, Any]) -> bool:
    kind = event["kind"]
    if kind == "tools":
        return bool(honored.get("toolsListChanged"))
    if kind == "prompts":
        return bool(honored.get("promptsListChanged"))
    if kind == "resources":
        return bool(honored.get("resourcesListChanged"))
    return event.get("uri") in honored.get("resourceSubscriptions", ())


async def listen(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    """``subscriptions/listen``: acknowledge the honoured filter, then forward matching events
    until the client goes or the server shuts down."""
    requested = params.get("notifications")
    honored = honored_filter(requested, core.capabilities(), core.settings.max_subscriptions)
    topics = core.listen_topics
    for topic in topics:
        honored.update(await topic.honor(core, requested or {}, req))
    meta = {META_SUBSCRIPTION_ID: req.jsonrpc_id}
    caller = caller_of(req.auth, req.asgi_scope)
    core.streams.take(caller)  # refused (503) when the caller holds its most long-lived streams
    try:
        return await _forward(core, honored, topics, meta, req)
    finally:
        core.streams.give(caller)


async def _forward(core: ServerCore, honored: dict[str, Any], topics: list[ListenTopic], meta: dict[str, Any],
                   req: Inbound) -> dict[str, Any]:
    """Acknowledge, then forward matching events until the client goes or the server shuts down."""
    queue: BoundedQueue[BusEvent] = BoundedQueue(core.settings.stream_queue_max)

    tenant = req.tenant_id
    view = ViewTracker(core, req)

    def on_event(event: BusEvent) -> None:
        if (_wanted(event, honored) and reaches(event, tenant) and view.reaches(event)) or any(
                t.wants(event, honored) for t in topics):
            queue.put_nowait(event)

    unsubscribe = core.notifier.bus.subscribe(on_event)
    stop = core.closing.add_listener(lambda: queue.put_nowait(None))
    try:
        req.outbound.post({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                             "params": {"_meta": meta, "notifications": honored}})
        await req.outbound.drain()
        while True:
            event = await queue.get()
            if event is None:
                break
            note = notification_for(event)
            for topic in topics:
                if note is None and topic.wants(event, honored):
                    note = await topic.notification(event, honored, req)
            if note is None:
                continue
            note["params"] = {**note.get("params", {}), "_meta": meta}
            req.outbound.post(note)
    finally:
        unsubscribe()
        stop()
    return {"_meta": meta}
