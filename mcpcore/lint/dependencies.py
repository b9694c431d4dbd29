"""Rules about what the framework fills: dependencies (``Depends``) and who sees a definition."""

from __future__ import annotations

from ..definitions.tools import ToolDefinition
from .base import Sink, Subject

__all__ = ["check_dependencies", "check_visibility"]


def check_dependencies(subject: Subject, tool: ToolDefinition, sink: Sink) -> None:
    """``dependency-in-schema``: a hand-written input schema asks the client for a parameter the
    server fills itself (a dependency or the ``Context``), which the call then never reads."""
    props = tool.input_schema.get("properties")
    if not isinstance(props, dict):
        return
    filled = [name for name, _ in tool.args.deps]
    if tool.args.ctx_param is not None:
        filled.append(tool.args.ctx_param)
    for name in filled:
        if name in props:
            sink.add("dependency-in-schema", subject,
                     f"input_schema lists {name!r}, which the server fills itself (a dependency or the Context); "
                     "the client is asked for a value the call never reads",
                     f"remove {name!r} from input_schema's properties (and required)")


def check_visibility(subject: Subject, tool: ToolDefinition, sink: Sink) -> None:
    """``visibility-covers-auth``: callers who see a tool may call it."""
    rule = tool.visible_to
    if not tool.auth or not isinstance(rule, tuple):
        return
    missing = [s for s in tool.auth if s not in rule]
    if missing:
        sink.add("visibility-covers-auth", subject,
                 f"visible_to shows the tool to callers without {', '.join(repr(s) for s in missing)}, which auth= "
                 "requires, so they see a tool that refuses them",
                 f"add {', '.join(repr(s) for s in missing)} to visible_to, or drop visible_to and rely on auth=")
