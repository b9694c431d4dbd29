"""Tasks: tool calls whose result the client collects later, from any instance.

A tool declared ``@tool(task="optional")`` (or ``"required"``, or a
:class:`~mcpcore.definitions.tasks.TaskSupport`) may answer ``tools/call`` with a task: the
record is stored before the answer, the handler runs in the background on the instance that
accepted it (holding a renewed lease), and ``tasks/get``, ``tasks/update``, ``tasks/cancel``
(2026-07-28, the ``io.modelcontextprotocol/tasks`` extension) or ``tasks/get``, ``tasks/result``,
``tasks/list``, ``tasks/cancel`` (2025-11-25) work on any instance. See docs/tasks.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..definitions.tasks import TaskSupport
from .base import TaskStore
from .calls import TaskToolCalls
from .memory import MemoryTaskStore
from .methods import register
from .service import TaskService
from .topic import TaskTopic

if TYPE_CHECKING:
    from ..extensions.seam import Seam

__all__ = ["MemoryTaskStore", "TaskService", "TaskStore", "TaskSupport", "Tasks"]


class Tasks:
    """Task tools run as tasks on ``store``, an extension (:class:`~mcpcore.extensions.seam.Seam`):
    the ``tools/call`` hook, the ``tasks/*`` methods, the listen topic, the extension's
    declaration (made once a task tool exists), the attempts started and stopped with the app.
    ``service`` is the :class:`TaskService` once plugged in."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.service: TaskService | None = None

    def plug_into(self, seam: Seam) -> None:
        svc = self.service = TaskService(seam.core, self.store, seam.services)
        seam.run_task_calls(TaskToolCalls(svc))
        seam.add_listen_topic(TaskTopic(svc))
        register(seam, svc)
        seam.on_start(svc.start, svc.close)
