"""The one table of the methods a client calls: each method's era, family, the parameter that
names what it calls, whether 2026-07-28 mirrors that name in ``Mcp-Name``, its middleware hook,
the server capability it needs and whether its 2026-07-28 result carries a cache hint.

Every module that needs one of these facts reads it here (the dispatcher's routes and gates,
the envelope's header checks, the string bounds, ``Call.name``, the middleware hooks, the rate
limit's keys, visibility, the client's headers), so a method family is added in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .versions import Era

__all__ = ["BY_NAME", "LIST_METHODS", "METHODS", "Family", "Method", "Naming", "method"]

Family = Literal["lifecycle", "tools", "prompts", "resources", "completions", "logging", "listen", "tasks",
                 "skills"]
Naming = Literal["tool", "prompt", "resource"]


@dataclass(frozen=True, slots=True)
class Method:
    """One method a client calls."""

    name: str
    family: Family
    era: Era | None = None
    """The era that serves it (``None``: both)."""
    names_by: str | None = None
    """The parameter that names what the call is about (``"name"``, ``"uri"``, ``"taskId"``):
    bounded in length (:mod:`mcpcore.protocol.limits`)."""
    names: Naming | None = None
    """The kind of definition ``names_by`` names in the registry (what ``Call.name`` and
    ``Call.definition`` report, what visibility checks, what the rate limit keys by)."""
    mirrored: bool = False
    """Whether a 2026-07-28 request carries ``names_by`` in its ``Mcp-Name`` header."""
    hook: str | None = None
    """The :class:`~mcpcore.Middleware` hook that wraps it (besides ``on_request``)."""
    gate: str | None = None
    """The server capability it needs (``None``: none)."""
    cached: bool = False
    """Whether its 2026-07-28 result carries ``ttlMs``/``cacheScope`` by default."""
    listing: bool = False
    """One of the four list methods (paginated, cached per era, page and view)."""


_MODERN, _LEGACY = Era.MODERN, Era.LEGACY

METHODS: tuple[Method, ...] = (
    Method("initialize", "lifecycle", _LEGACY, hook="on_initialize"),
    Method("ping", "lifecycle", _LEGACY),
    Method("server/discover", "lifecycle", _MODERN, cached=True),
    Method("logging/setLevel", "logging", _LEGACY),
    Method("tools/list", "tools", hook="on_list_tools", gate="tools", cached=True, listing=True),
    Method("tools/call", "tools", names_by="name", names="tool", mirrored=True, hook="on_call_tool", gate="tools"),
    Method("prompts/list", "prompts", hook="on_list_prompts", gate="prompts", cached=True, listing=True),
    Method("prompts/get", "prompts", names_by="name", names="prompt", mirrored=True, hook="on_get_prompt",
           gate="prompts"),
    Method("resources/list", "resources", hook="on_list_resources", gate="resources", cached=True, listing=True),
    Method("resources/templates/list", "resources", hook="on_list_resource_templates", gate="resources",
           cached=True, listing=True),
    Method("resources/read", "resources", names_by="uri", names="resource", mirrored=True, hook="on_read_resource",
           gate="resources", cached=True),
    Method("resources/subscribe", "resources", _LEGACY, names_by="uri", names="resource", hook="on_subscribe",
           gate="resources"),
    Method("resources/unsubscribe", "resources", _LEGACY, names_by="uri", names="resource", hook="on_unsubscribe",
           gate="resources"),
    Method("completion/complete", "completions", hook="on_complete", gate="completions"),
    Method("subscriptions/listen", "listen", _MODERN, hook="on_listen"),
    # SEP-2663: a task's requests carry its id in Mcp-Name, so a load balancer may route by it
    Method("tasks/get", "tasks", names_by="taskId", mirrored=True, gate="tools"),
    Method("tasks/cancel", "tasks", names_by="taskId", mirrored=True, gate="tools"),
    Method("tasks/update", "tasks", _MODERN, names_by="taskId", mirrored=True, gate="tools"),
    Method("tasks/list", "tasks", _LEGACY, gate="tools"),
    Method("tasks/result", "tasks", _LEGACY, gate="tools"),
    Method("skills/list", "skills", gate="resources"),
    Method("skills/get", "skills", names_by="uri", gate="resources"),
    Method("resources/directory/read", "skills", names_by="uri", gate="resources"),
)

BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}
"""Each method of :data:`METHODS` by its name."""

LIST_METHODS = frozenset(m.name for m in METHODS if m.listing)
"""``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list``."""


def method(name: str) -> Method | None:
    """The method called ``name`` (``None``: none this table knows, e.g. an extension's)."""
    return BY_NAME.get(name)
