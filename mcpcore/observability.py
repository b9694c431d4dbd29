"""An app's Prometheus metrics (:mod:`mcpcore.metrics`) wired to its parts: the observer the
invoke pipeline times calls with, task transitions from the notifier, the gauges read from the
stores and the tasks, the ``/metrics`` answer.

Built only when ``MCP_METRICS_ENABLED=true``; an app without it holds ``None`` and pays nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, cast

from .asgi_types import Send
from .metrics import CallObserver, Metrics, enable

if TYPE_CHECKING:
    from .config import Settings
    from .server.dispatcher import Dispatcher
    from .server.notify import Notifier
    from .tasks import TaskService
    from .wiring import Stores

__all__ = ["REFRESH_SECONDS", "AppMetrics", "app_telemetry"]


REFRESH_SECONDS = 5.0
"""How often a worker writes its gauges for the other workers' scrapes (multiprocess mode)."""


class AppMetrics:
    """The metrics of one app (``app.metrics``)."""

    def __init__(self, settings: Settings, telemetry: Any, dispatcher: Dispatcher, notifier: Notifier,
                 stores: Stores, tasks: TaskService | None) -> None:
        self.metrics: Metrics = enable()
        self.stores = stores
        self.tasks = tasks
        self.path = settings.metrics_path
        self.observer = CallObserver(self.metrics, telemetry)
        dispatcher.telemetry = cast(Any, self.observer)  # what invoke observes a call with
        notifier.observe = self._published
        self.metrics.gauges = self.refresh

    def _published(self, event: dict[str, Any]) -> None:
        if event.get("kind") == "task" and isinstance(event.get("status"), str):
            self.metrics.tasks.labels(event["status"]).inc()

    def refresh(self) -> None:
        """Set the gauges from what this process holds now."""
        m = self.metrics
        m.sessions.set(self.stores.sessions_active())
        held = self.stores.buffer_bytes()
        m.buffer_bytes.set(held[0] if held is not None else 0)
        m.tasks_running.set(len(self.tasks.executions) if self.tasks is not None else 0)

    async def open(self, stack: contextlib.AsyncExitStack) -> None:
        """In multiprocess mode, write the gauges every :data:`REFRESH_SECONDS` (another worker
        may answer the scrape), and take them out of the sums when the worker stops."""
        if self.metrics.multiprocess_dir is None:
            return
        task = asyncio.get_running_loop().create_task(self._refresh_forever())
        stack.callback(self.metrics.retire)
        stack.callback(task.cancel)

    async def _refresh_forever(self) -> None:
        while True:
            self.refresh()
            await asyncio.sleep(REFRESH_SECONDS)

    async def answer(self, send: Send) -> None:
        """The scrape's response: the text format of every metric."""
        body, media_type = self.metrics.exposition()
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", media_type.encode()), (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": body})


def app_telemetry(given: Any, settings: Settings, stores: Stores) -> Any:
    """The app's OpenTelemetry (``McpApp(telemetry=...)``): ``given`` when a
    :class:`~mcpcore.telemetry.Telemetry`, none when ``False`` (or unset with ``OTEL_ENABLED``
    false), else one reading the stores' gauges."""
    if given is False or (given is None and not settings.otel_enabled):
        return None
    from .telemetry import Telemetry

    if isinstance(given, Telemetry):
        return given
    return Telemetry(sessions_active=stores.sessions_active, buffer_bytes=stores.buffer_bytes)
