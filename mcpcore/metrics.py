"""Prometheus metrics (extra ``mcpcore[metrics]``), off unless ``MCP_METRICS_ENABLED=true``.

The metrics of a process are one :class:`Metrics`, made by :func:`enable` (an app whose settings
turn them on calls it). The parts that count refusals (the HTTP server's ceilings, the body
limit, rate limits, Redis errors, JSON-RPC errors) call this module's functions, which do nothing
while no app enabled metrics: they sit on refusal and error paths only. Calls are timed by the
app's observer (:class:`CallObserver`), which the invoke pipeline runs only when it is set, so a
``tools/call`` pays nothing when metrics are off.

Under several worker processes (``mcpcore run --workers``, or any server that sets
``PROMETHEUS_MULTIPROC_DIR``) the library's multiprocess mode keeps each worker's values in a file
of that folder, and a scrape of any worker reads them all (gauges: the sum over live workers).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .errors import ConfigurationError

__all__ = ["CallObserver", "Metrics", "active", "count_error", "count_rate_limited", "count_redis_error", "enable",
           "hit_ceiling", "scrape"]

_KINDS = {"resource_read": "resource", "prompt_generation": "prompt"}
"""The span names of :func:`mcpcore.server.invoke.span` (``<prefix>:<name>``) -> the call's kind."""


class Metrics:
    """Every metric of the process (see docs/metrics.md for their meaning)."""

    def __init__(self) -> None:
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
        except ImportError as exc:
            raise ConfigurationError("MCP_METRICS_ENABLED needs prometheus-client: "
                                     "pip install 'mcpcore[metrics]'") from exc
        self.multiprocess_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.calls = Counter("mcp_calls", "Tool calls, resource reads and prompt gets, by kind, name and outcome",
                             ["kind", "name", "outcome"], registry=reg)
        self.duration = Histogram("mcp_call_duration_seconds", "How long tool calls, resource reads and prompt "
                                  "gets took, by kind and name", ["kind", "name"], registry=reg)
        self.errors = Counter("mcp_errors", "JSON-RPC error answers and tool error results, by error code",
                              ["code"], registry=reg)
        self.sessions = Gauge("mcp_sessions", "2025-era sessions held in memory (with Redis: being served now)",
                              registry=reg, multiprocess_mode="livesum")
        self.tasks = Counter("mcp_task_transitions", "Task status changes made by this server, by new status",
                             ["status"], registry=reg)
        self.tasks_running = Gauge("mcp_tasks_running", "Task attempts running in this server",
                                   registry=reg, multiprocess_mode="livesum")
        self.buffer_bytes = Gauge("mcp_event_buffer_bytes", "Bytes of resumable SSE events held in memory",
                                  registry=reg, multiprocess_mode="livesum")
        self.redis_errors = Counter("mcp_redis_errors", "Redis operations that failed (the store was unreachable), "
                                    "by error", ["error"], registry=reg)
        self.rate_limited = Counter("mcp_rate_limited", "Calls a RateLimit layer refused, by limiter",
                                    ["limiter"], registry=reg)
        self.ceilings = Counter("mcp_http_ceiling_hits", "Requests and connections refused at an HTTP ceiling "
                                "(body, JSON depth, header size or count, read deadlines, connections)",
                                ["ceiling"], registry=reg)
        self.gauges: Callable[[], None] | None = None
        """Sets the gauges from what the app holds (the last app that enabled metrics: one app
        per process is the rule of a served app)."""

    def refresh(self) -> None:
        """Set the gauges from what the app holds now (in multiprocess mode: this worker's)."""
        if self.gauges is not None:
            self.gauges()

    def exposition(self) -> tuple[bytes, str]:
        """The text format of every metric (every worker's in multiprocess mode) and its media type."""
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        self.refresh()
        if self.multiprocess_dir is None:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST

    def retire(self) -> None:
        """This worker is stopping: drop its live gauges from the sums."""
        if self.multiprocess_dir is not None:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid(), self.multiprocess_dir)  # type: ignore[no-untyped-call]


_active: Metrics | None = None


def enable() -> Metrics:
    """The process's metrics, made on first use.

    Raises:
        ConfigurationError: ``prometheus-client`` is not installed.
    """
    global _active
    if _active is None:
        _active = Metrics()
    return _active


def active() -> Metrics | None:
    """The process's metrics, or ``None`` while no app enabled them."""
    return _active


def scrape() -> tuple[bytes, str]:
    """:meth:`Metrics.exposition` of the process's metrics (enabling them if need be)."""
    return enable().exposition()


def hit_ceiling(ceiling: str) -> None:
    """Count a refusal at an HTTP ceiling (no-op while metrics are off)."""
    if _active is not None:
        _active.ceilings.labels(ceiling).inc()


def count_error(code: int) -> None:
    """Count an error answer by its JSON-RPC code (no-op while metrics are off)."""
    if _active is not None:
        _active.errors.labels(str(code)).inc()


def count_redis_error(exc: BaseException) -> None:
    """Count a failed Redis operation (no-op while metrics are off)."""
    if _active is not None:
        _active.redis_errors.labels(type(exc).__name__).inc()


def count_rate_limited(limiter: str) -> None:
    """Count a call a rate limiter refused (no-op while metrics are off)."""
    if _active is not None:
        _active.rate_limited.labels(limiter).inc()


class CallObserver:
    """What the invoke pipeline observes a call with when metrics are on: the call's count and
    duration here, and the OpenTelemetry span and metrics of ``telemetry`` when that is on too."""

    def __init__(self, metrics: Metrics, telemetry: Any = None) -> None:
        self.metrics = metrics
        self.telemetry = telemetry
        self._children: dict[tuple[str, str], tuple[Any, Any, Any]] = {}

    def _child(self, kind: str, name: str) -> tuple[Any, Any, Any]:
        """``(success counter, error counter, histogram)`` of one name, looked up once."""
        key = (kind, name)
        found = self._children.get(key)
        if found is None:
            m = self.metrics
            found = (m.calls.labels(kind, name, "success"), m.calls.labels(kind, name, "error"),
                     m.duration.labels(kind, name))
            if len(self._children) < 10_000:
                self._children[key] = found
        return found

    def _timed(self, kind: str, name: str, inner: Callable[[bool], None] | None) -> _Timing:
        ok, failed, histogram = self._child(kind, name)
        return _Timing(ok, failed, histogram, inner)

    def tool_call(self, name: str, req: Any) -> contextlib.AbstractContextManager[Callable[[bool], None]]:
        """A tool call: counted by outcome and timed (and the telemetry's span, when on)."""
        if self.telemetry is None:
            return self._timed("tool", name, None)
        return self._traced_tool_call(name, req)

    @contextlib.contextmanager
    def _traced_tool_call(self, name: str, req: Any) -> Iterator[Callable[[bool], None]]:
        with self.telemetry.tool_call(name, req) as inner, self._timed("tool", name, inner) as report:
            yield report

    @contextlib.contextmanager
    def execution(self, span: str, req: Any, attributes: Mapping[str, Any]) -> Iterator[Any]:
        """A resource read or prompt get (``span``: ``resource_read:<name>`` or
        ``prompt_generation:<name>``), counted and timed; failures are the exceptions it raises."""
        prefix, _, name = span.partition(":")
        tel = self.telemetry
        with contextlib.ExitStack() as stack:
            opened = stack.enter_context(tel.execution(span, req, attributes)) if tel is not None else None
            stack.enter_context(self._timed(_KINDS.get(prefix, prefix), name, None))
            yield opened

    def storage(self, op: str) -> contextlib.AbstractContextManager[None]:
        """The telemetry's storage span, when on."""
        return self.telemetry.storage(op) if self.telemetry is not None else contextlib.nullcontext()


class _Timing:
    """One observed call (a plain context manager: a call pays for no generator): entered, it
    gives the function the pipeline reports the outcome to; left, it records the duration and
    counts the outcome (an exception is an error)."""

    __slots__ = ("failed", "histogram", "inner", "is_error", "ok", "start")

    def __init__(self, ok: Any, failed: Any, histogram: Any, inner: Callable[[bool], None] | None) -> None:
        self.ok = ok
        self.failed = failed
        self.histogram = histogram
        self.inner = inner
        self.is_error = False
        self.start = 0.0

    def report(self, is_error: bool) -> None:
        self.is_error = is_error
        if self.inner is not None:
            self.inner(is_error)

    def __enter__(self) -> Callable[[bool], None]:
        self.start = time.perf_counter()
        return self.report

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self.histogram.observe(time.perf_counter() - self.start)
        (self.failed if self.is_error or kind is not None else self.ok).inc()
