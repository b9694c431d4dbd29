"""Routing of list-changed and resource-updated notifications, per era.

A 2025-era handler's notification goes on its own request stream (``resources/updated`` only
when its session subscribed) and, through the bus, to every other session's GET stream. A
2026-07-28 handler's goes only to the bus, where listen streams apply their filters. ``app.notify``
publishes from outside any request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..bus.base import BusEvent, NotificationBus
from ..context import Inbound
from ..protocol.versions import Era

__all__ = ["LIST_CHANGED", "AppNotifier", "Notifier", "notification_for", "reaches"]

log = logging.getLogger("mcpcore.notify")

LIST_CHANGED = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}


def notification_for(event: BusEvent) -> dict[str, Any] | None:
    """The JSON-RPC notification for a bus event (``None`` for events that are not one)."""
    kind = event.get("kind")
    if kind == "resource" and isinstance(event.get("uri"), str):
        return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": event["uri"]}}
    method = LIST_CHANGED.get(kind) if isinstance(kind, str) else None
    return {"jsonrpc": "2.0", "method": method} if method else None


def reaches(event: BusEvent, tenant: str | None) -> bool:
    """Whether ``event`` may be delivered to a receiver serving ``tenant``: a resource update made
    inside a request belongs to that request's tenant; one from ``app.notify`` (no tenant) and
    list changes reach everyone."""
    owner = event.get("tenant")
    return owner is None or owner == (tenant or "")


def _sees_all(uri: str, req: Inbound) -> bool:
    return True


class Notifier:
    """Implements ``ctx.notify_*`` for a request (its Inbound)."""

    def __init__(self, bus: NotificationBus) -> None:
        self.bus = bus
        self._tasks: set[asyncio.Task[None]] = set()
        self.may_read: Callable[[str, Inbound], bool] = _sees_all
        """Whether a request's caller may read a resource (the server's visibility rules)."""
        self.observe: Callable[[BusEvent], None] | None = None
        """Told of every event published (the app's metrics count task transitions)."""

    def __call__(self, event: dict[str, Any], req: Inbound) -> None:
        origin = None
        if event["kind"] == "resource":
            event = {**event, "tenant": req.tenant_id or ""}
        if req.era is Era.LEGACY and req.session is not None:
            session = req.session
            note = notification_for(event)
            if note is not None and (event["kind"] != "resource" or (
                    event["uri"] in session.subscriptions and self.may_read(event["uri"], req))):
                req.outbound.post(note)
            elif event["kind"] == "resource":
                log.debug("resource %s updated; this session is not subscribed", event["uri"])
            origin = session.id
        self.publish({**event, "origin": origin})

    def publish(self, event: BusEvent) -> None:
        if self.observe is not None:
            self.observe(event)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._publish(event))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def publish_here(self, event: BusEvent) -> None:
        """Deliver ``event`` to this instance's sessions only: for a change every instance sees
        for itself (a proxied backend's, which each instance's own listener reports), so that
        no client is told twice."""
        deliver = getattr(self.bus, "deliver", None)
        if deliver is None:
            self.publish(event)
            return
        if self.observe is not None:
            self.observe(event)
        deliver(event)

    async def _publish(self, event: BusEvent) -> None:
        try:
            await self.bus.publish(event)
        except Exception:
            log.warning("could not publish a notification to the bus", exc_info=True)


def _change(kind: str, names: Sequence[str] | None) -> BusEvent:
    event: BusEvent = {"kind": kind, "origin": None}
    if names is not None:
        if isinstance(names, str):
            raise TypeError("names is a list of names, not one string")
        event["names"] = list(names)
    return event


class AppNotifier:
    """``app.notify``: publish changes from outside a request (background tasks, setup hooks)."""

    def __init__(self, notifier: Notifier) -> None:
        self._n = notifier

    async def tools_changed(self, names: Sequence[str] | None = None) -> None:
        """Every client that listens is told to re-list tools; with ``names`` (the tools that
        changed), only those whose view of one of them changed (see ``visible_to=``)."""
        await self._n.bus.publish(_change("tools", names))

    async def prompts_changed(self, names: Sequence[str] | None = None) -> None:
        """Every client that listens is told to re-list prompts (``names`` as for tools)."""
        await self._n.bus.publish(_change("prompts", names))

    async def resources_changed(self, uris: Sequence[str] | None = None) -> None:
        """Every client that listens is told to re-list resources (``uris`` as tools' ``names``)."""
        await self._n.bus.publish(_change("resources", uris))

    async def resource_updated(self, uri: str) -> None:
        """Clients subscribed to ``uri`` are told it changed."""
        await self._n.bus.publish({"kind": "resource", "uri": uri, "origin": None})
