"""Tasks: tool calls whose result the client collects later, from any instance.

A tool declared ``@tool(task="optional")`` (or ``"required"``, or a
:class:`~mcpcore.definitions.tasks.TaskSupport`) may answer ``tools/call`` with a task: the
record is stored before the answer, the handler runs in the background on the instance that
accepted it (holding a renewed lease), and ``tasks/get``, ``tasks/update``, ``tasks/cancel``
(2026-07-28, the ``io.modelcontextprotocol/tasks`` extension) or ``tasks/get``, ``tasks/result``,
``tasks/list``, ``tasks/cancel`` (2025-11-25) work on any instance. See docs/tasks.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..definitions.tasks import TaskSupport
from .base import TaskStore
from .calls import TaskToolCalls
from .memory import MemoryTaskStore
from .methods import register
from .service import TaskService
from .topic import TaskTopic

if TYPE_CHECKING:
    from ..config import Settings
    from ..context import ContextServices
    from ..server.dispatcher import Dispatcher

__all__ = ["MemoryTaskStore", "TaskService", "TaskStore", "TaskSupport", "serve_tasks"]


class TaskHost(Protocol):
    """What :func:`serve_tasks` reads of an app (:class:`~mcpcore.McpApp`)."""

    @property
    def dispatcher(self) -> Dispatcher: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def services(self) -> ContextServices: ...


def serve_tasks(app: TaskHost, store: TaskStore) -> TaskService:
    """Run ``app``'s task tools as tasks on ``store``: the ``tools/call`` hook, the ``tasks/*``
    methods, the listen topic and the extension's declaration (made once a task tool exists)."""
    core = app.dispatcher.core
    svc = TaskService(core, app.settings, store, app.services)
    core.tasks = TaskToolCalls(svc)
    core.listen_topics.append(TaskTopic(svc))
    core.forget_capabilities()
    register(app.dispatcher, svc)
    return svc
