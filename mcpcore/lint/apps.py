"""MCP Apps rules: every app tool has a text fallback, a served view, and a well-formed CSP."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..definitions.resources import ResourceDefinition
from ..definitions.tools import ToolDefinition
from ..extensions.apps import APP_MIME_TYPE, csp_problems
from .base import Sink, Subject

__all__ = ["check_apps"]


def _has_text(tool: ToolDefinition) -> bool:
    """Whether the tool's own result is already text a model can read (not a JSON dump)."""
    return tool.format is not None or (tool.output is not None and tool.output.scalar is str)


def _serves(resources: Sequence[ResourceDefinition], uri: str) -> ResourceDefinition | None:
    for r in resources:
        if r.uri == uri or (r.is_template and r.template.match(uri) is not None):
            return r
    return None


def check_apps(subjects: Sequence[Subject], sink: Sink) -> None:
    """``app-text-fallback``, ``app-resource-not-found`` and ``app-csp-malformed``."""
    resources = [s.definition for s in subjects if isinstance(s.definition, ResourceDefinition)]
    resources += [d for s in subjects if isinstance(s.definition, ToolDefinition) and s.definition.app is not None
                  and (d := s.definition.app.definition) is not None]
    for s in subjects:
        tool = s.definition
        if not isinstance(tool, ToolDefinition) or tool.app is None:
            continue
        app = tool.app
        uri = app.uri or ""
        if app.fallback is None and not _has_text(tool):
            sink.add("app-text-fallback", s,
                     f"tool {tool.name!r} opens an MCP App but has no text fallback; hosts without Apps show "
                     "the model a JSON dump instead of a result it can read",
                     "pass App(fallback='...') or fallback=lambda data: '...' summarising the result in words")
        view = app.definition or _serves(resources, uri)
        if app.file is not None and not Path(app.file).is_file():
            sink.add("app-resource-not-found", s,
                     f"the view of tool {tool.name!r} is read from {str(app.file)!r}, which does not exist",
                     "point file= at the HTML file (paths are relative to the working directory) or pass html=")
        elif view is None:
            sink.add("app-resource-not-found", s,
                     f"tool {tool.name!r} opens {uri}, but no resource of this app serves it",
                     f"register a resource at {uri} with mime_type={APP_MIME_TYPE!r}, or give App html= or file=")
        elif view.mime_type != APP_MIME_TYPE:
            sink.add("app-resource-not-found", s,
                     f"tool {tool.name!r} opens {uri}, served as {view.mime_type!r} instead of {APP_MIME_TYPE!r}, "
                     "so hosts do not render it as an app",
                     f"declare mime_type={APP_MIME_TYPE!r} on the resource at {uri}")
        problems = csp_problems(app.csp or {})  # type: ignore[arg-type]
        if problems:
            sink.add("app-csp-malformed", s,
                     f"the CSP of tool {tool.name!r}'s app is malformed: {'; '.join(problems)}",
                     "list origins only, e.g. Csp(connect_domains=['https://api.example.com'])")
