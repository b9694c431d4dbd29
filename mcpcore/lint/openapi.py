"""Tools generated from an OpenAPI document: the operations that could not become tools."""

from __future__ import annotations

from ..definitions.tools import ToolDefinition
from ..openapi.build import OPENAPI_ATTR, OpenApiTools
from .base import Sink, Subject

__all__ = ["check_openapi"]


def check_openapi(subject: Subject, d: ToolDefinition, sink: Sink) -> None:
    """On the first tool of a generated set: one finding per operation that was skipped, with the
    JSON pointer of the problem and the reason."""
    built = getattr(d.fn, OPENAPI_ATTR, None)
    if not isinstance(built, OpenApiTools) or not built or built[0] is not d:
        return
    title = f" of {built.title!r}" if built.title else ""
    for skipped in built.skipped:
        sink.add("openapi-skipped", subject, f"operation {skipped.operation}{title} is not a tool: "
                 f"{skipped.pointer}: {skipped.reason}",
                 f"fix the document at {skipped.pointer}, or leave {skipped.operation} out of routes=")
