"""``@tool(task=...)``: whether a tool may run as a task, and how.

A task is a call whose result the client collects later (``tasks/get``), so the work outlives
the HTTP request and the instance that accepted it. The mode follows the protocol's
``execution.taskSupport``:

* ``"forbidden"`` (the default): always an ordinary call.
* ``"optional"``: a task when the client can take one (2026-07-28: it declared the
  ``io.modelcontextprotocol/tasks`` extension; 2025-11-25: it sent ``params.task``), else an
  ordinary call.
* ``"required"``: only as a task; a client that cannot take one is refused (``-32021`` on
  2026-07-28, ``-32601`` on 2025-11-25).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigurationError

__all__ = ["TaskMode", "TaskSupport", "task_support"]

TaskMode = Literal["forbidden", "optional", "required"]
_MODES = ("forbidden", "optional", "required")
_STARTS = ("call", "handler")


@dataclass(frozen=True, slots=True)
class TaskSupport:
    """How a tool runs as a task: ``@tool(task=TaskSupport("optional", rerun=True))``.

    Args:
        mode: ``"optional"`` or ``"required"`` (``"forbidden"`` is the same as no ``task=``).
        rerun: the tool is safe to run again from the start (idempotent, or it checkpoints its
            progress): when the instance running it dies, another instance runs it again.
            Otherwise such a task is marked failed, with the reason.
        start: ``"call"`` (default): the task exists from the moment the call arrives, and every
            ``ctx.request_input`` of the handler is a question of the task. ``"handler"``: the call
            runs as an ordinary one (``ctx.request_input`` answers ``input_required`` on the call
            itself) until the handler awaits ``ctx.start_task()``; the client then receives the
            task and the handler goes on as it (2026-07-28; a 2025-era task starts at the call).
        ttl_ms: how long the task and its result are kept (default ``MCP_TASKS_TTL_MS``).
        poll_interval_ms: the polling interval suggested to clients (default
            ``MCP_TASKS_POLL_INTERVAL_MS``).
    """

    mode: TaskMode = "optional"
    rerun: bool = False
    start: Literal["call", "handler"] = "call"
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ConfigurationError(f"task mode must be one of {', '.join(_MODES)}, got {self.mode!r}")
        if self.start not in _STARTS:
            raise ConfigurationError(f"task start must be 'call' or 'handler', got {self.start!r}")
        for name in ("ttl_ms", "poll_interval_ms"):
            value = getattr(self, name)
            if value is not None and (type(value) is not int or value < 1):
                raise ConfigurationError(f"task {name} must be a positive integer (milliseconds), got {value!r}")

    @property
    def required(self) -> bool:
        """Whether the tool runs only as a task."""
        return self.mode == "required"


def task_support(owner: str, value: object) -> TaskSupport | None:
    """The ``task=`` option of a tool, normalised: ``None`` for an ordinary tool."""
    if value is None:
        return None
    if isinstance(value, str):
        if value not in _MODES:
            raise ConfigurationError(f"{owner}: task= must be one of {', '.join(_MODES)} or a TaskSupport, "
                                     f"got {value!r}")
        value = TaskSupport(value)  # type: ignore[arg-type]
    if not isinstance(value, TaskSupport):
        raise ConfigurationError(f"{owner}: task= must be 'optional', 'required' or a TaskSupport")
    return None if value.mode == "forbidden" else value
