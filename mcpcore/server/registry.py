"""The definitions an app serves, with duplicate checks and lookup by name or URI."""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..definitions.checks import check_options
from ..definitions.common import SeenWithAny, VisibilityRule, attach
from ..definitions.prompts import PROMPT_ATTR, PROMPT_OPTIONS, PromptDefinition, build_prompt
from ..definitions.resources import RESOURCE_ATTR, ResourceDefinition
from ..definitions.tools import ANNOTATION_OPTIONS, TOOL_ATTR, TOOL_OPTIONS, ToolDefinition, build_tool
from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..extensions.apps import App

__all__ = ["Registry", "definitions_in"]

Definition = ToolDefinition | ResourceDefinition | PromptDefinition


def definitions_in(obj: Any) -> list[Definition]:
    """The definitions carried by ``obj``: a definition, a decorated function, or a module
    (every decorated function defined or imported into it, in definition order)."""
    if isinstance(obj, (ToolDefinition, ResourceDefinition, PromptDefinition)):
        return [obj]
    if isinstance(obj, types.ModuleType):
        found: list[Definition] = []
        seen: set[int] = set()
        for value in vars(obj).values():
            for d in _attached(value):
                if id(d) not in seen:
                    seen.add(id(d))
                    found.append(d)
        return found
    attached = _attached(obj)
    if not attached:
        raise ConfigurationError(f"{obj!r} is not a tool, resource or prompt (decorate it first)")
    return attached


def _attached(value: Any) -> list[Definition]:
    out: list[Definition] = []
    for attr in (TOOL_ATTR, RESOURCE_ATTR, PROMPT_ATTR):
        d = getattr(value, attr, None) if callable(value) else None
        if isinstance(d, (ToolDefinition, ResourceDefinition, PromptDefinition)):
            out.append(d)
    return out


class Registry:
    """Tools by name, fixed resources by URI, resource templates in order, prompts by name."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolDefinition] = {}
        self.resources: dict[str, ResourceDefinition] = {}
        self.templates: list[ResourceDefinition] = []
        self.prompts: dict[str, PromptDefinition] = {}
        self.version = 0
        self._listeners: list[Callable[[str], None]] = []
        self._views: dict[App, tuple[ResourceDefinition, list[ToolDefinition]]] = {}

    def on_change(self, fn: Callable[[str], None]) -> None:
        self._listeners.append(fn)

    def _changed(self, kind: str) -> None:
        self.version += 1
        for fn in self._listeners:
            fn(kind)

    def add(self, obj: Any) -> list[Definition]:
        """Register what ``obj`` carries; :class:`ConfigurationError` on a duplicate."""
        added = definitions_in(obj)
        for d in added:
            if isinstance(d, ToolDefinition):
                if d.name in self.tools and self.tools[d.name] is not d:
                    raise ConfigurationError(f"duplicate tool name {d.name!r}")
                self.tools[d.name] = d
                self._changed("tools")
                if d.app is not None and d.app.definition is not None:
                    self._add_view(d.app, d.app.definition, d)
            elif isinstance(d, PromptDefinition):
                if d.name in self.prompts and self.prompts[d.name] is not d:
                    raise ConfigurationError(f"duplicate prompt name {d.name!r}")
                self.prompts[d.name] = d
                self._changed("prompts")
            else:
                self._add_resource(d)
        return added

    def _add_resource(self, d: ResourceDefinition) -> None:
        if d.is_template:
            for t in self.templates:
                if t.uri == d.uri and t is not d:
                    raise ConfigurationError(f"duplicate resource template {d.uri!r}")
            if d not in self.templates:
                self.templates.append(d)
        else:
            if d.uri in self.resources and self.resources[d.uri] is not d:
                raise ConfigurationError(f"duplicate resource URI {d.uri!r}")
            self.resources[d.uri] = d
        self._changed("resources")

    def _add_view(self, app: App, served: ResourceDefinition, tool: ToolDefinition) -> None:
        """Serve ``tool``'s App view with its tools' visibility and scopes (this registry's copy:
        an App may serve tools of several apps)."""
        found = self._views.get(app)
        if found is None:
            view = dataclasses.replace(served)
            self._add_resource(view)
            found = self._views[app] = (view, [])
        view, owners = found
        if tool not in owners:
            owners.append(tool)
        self._follow(view, owners)

    def _follow(self, view: ResourceDefinition, owners: Sequence[ToolDefinition]) -> None:
        view.visible_to = _seen_with(owners)
        view.auth = tuple(s for s in owners[0].auth if all(s in o.auth for o in owners[1:]))
        self._changed("resources")

    def views(self) -> set[ResourceDefinition]:
        """The MCP App views this registry serves for its tools (made from the tools' apps)."""
        return {view for view, _ in self._views.values()}

    def add_all(self, objs: Iterable[Any]) -> None:
        for o in objs:
            self.add(o)

    def remove_tool(self, name: str) -> bool:
        """Forget tool ``name``; its App view goes with its last tool."""
        tool = self.tools.pop(name, None)
        if tool is None:
            return False
        self._changed("tools")
        found = self._views.get(tool.app) if tool.app is not None else None
        if found is not None and tool in found[1]:
            view, owners = found
            owners.remove(tool)
            if owners:
                self._follow(view, owners)
            else:
                del self._views[tool.app]  # type: ignore[arg-type]
                self.remove_resource(view.uri)
        return True

    def remove_prompt(self, name: str) -> bool:
        if self.prompts.pop(name, None) is None:
            return False
        self._changed("prompts")
        return True

    def remove_resource(self, uri: str) -> bool:
        if self.resources.pop(uri, None) is not None:
            self._changed("resources")
            return True
        for t in self.templates:
            if t.uri == uri:
                self.templates.remove(t)
                self._changed("resources")
                return True
        return False

    def find_resource(self, uri: str) -> tuple[ResourceDefinition, dict[str, Any]] | None:
        """The definition serving ``uri`` and the template variables it carries."""
        d = self.resources.get(uri)
        if d is not None:
            return d, {}
        for t in self.templates:
            params = t.template.match(uri)
            if params is not None:
                return t, params
        return None


def _seen_with(owners: Sequence[ToolDefinition]) -> VisibilityRule:
    """Who sees a view: everyone when one of its tools is ungated, else whoever sees one."""
    if any(o.visible_to is None for o in owners):
        return None
    return owners[0].visible_to if len(owners) == 1 else SeenWithAny(owners)


def decorate_inline(fn: Callable[..., Any], kind: str, **options: Any) -> Any:
    """Build a definition for ``@app.tool``/``@app.prompt`` style registration."""
    if not (inspect.isfunction(fn) or inspect.ismethod(fn) or callable(fn)):
        raise TypeError(f"@app.{kind} decorates a function")
    name = options.get("name") or getattr(fn, "__name__", "?")
    if kind == "tool":
        check_options("tool", name, options, TOOL_OPTIONS, ANNOTATION_OPTIONS)
        return attach(fn, TOOL_ATTR, build_tool(fn, **options))
    check_options("prompt", name, options, PROMPT_OPTIONS)
    return attach(fn, PROMPT_ATTR, build_prompt(fn, **options))
