"""Rules specific to one kind: tool annotations and fields, resources, prompts."""

from __future__ import annotations

from urllib.parse import urlsplit

from ..definitions.prompts import PromptDefinition
from ..definitions.resources import ResourceDefinition
from ..definitions.tools import ToolDefinition
from .base import Sink, Subject
from .schemas import undescribed_fields

__all__ = ["check_annotations", "check_prompt", "check_resource", "check_tool_fields"]


def check_annotations(subject: Subject, tool: ToolDefinition, sink: Sink) -> None:
    """``annotation-coherence``."""
    ann = tool.annotations or {}
    if ann.get("readOnlyHint") is True and ann.get("destructiveHint") is True:
        sink.add("annotation-coherence", subject,
                 "annotations say readOnlyHint and destructiveHint together; a read-only tool cannot destroy "
                 "anything, so clients cannot tell whether to ask for confirmation",
                 "drop destructive_hint if the tool only reads, otherwise drop read_only_hint")


def check_tool_fields(subject: Subject, tool: ToolDefinition, sink: Sink) -> None:
    """``input-field-description`` and ``output-field-description``."""
    for path in undescribed_fields(tool.input_schema):
        sink.add("input-field-description", subject,
                 f"input field {path!r} has no description; the model fills it in blind",
                 f"describe {path!r}: Annotated[..., Field(description='...')] on the parameter or model field, "
                 "or a 'description' key in a hand-written input_schema")
    if tool.output is None:
        return
    # {"result": ...} wraps a non-object return; the tool's description already says what it is.
    skip = frozenset({"result"}) if tool.output.wrap else frozenset()
    for path in undescribed_fields(tool.output.schema, skip_root=skip):
        sink.add("output-field-description", subject,
                 f"output field {path!r} has no description; the model reads it without knowing what it means",
                 f"describe {path!r} with Field(description='...') on the output model")


def _authority(uri: str) -> str:
    try:
        return urlsplit(uri).netloc
    except ValueError:
        return ""


def check_resource(subject: Subject, res: ResourceDefinition, sink: Sink) -> None:
    """``resource-name-not-uri``, ``resource-mime-type``, ``resource-template-list``."""
    name = res.name
    host = _authority(res.uri)
    looks_like_host = "." in host and "{" not in host and name.lower() == host.lower()
    if ":" in name or "/" in name or name == res.uri or looks_like_host:
        sink.add("resource-name-not-uri", subject,
                 f"resource name {name!r} is a URI or host, not a name; clients list resources by name and the "
                 f"URI ({res.uri}) is shown beside it anyway",
                 f"name it for what it serves, e.g. name={_suggest(res)!r}")
    if not res.mime_type:
        sink.add("resource-mime-type", subject,
                 f"resource {res.uri} declares no MIME type; clients cannot tell how to render what it returns",
                 "pass mime_type=, e.g. 'text/plain', 'text/markdown' or 'application/json'")
    if res.is_template and res.lister is None:
        sink.add("resource-template-list", subject,
                 f"resource template {res.uri} has no list=, so resources/list never shows a concrete resource "
                 "and clients must guess the variables",
                 "pass list= returning Resource entries, or silence this rule when the space is open-ended")


def _suggest(res: ResourceDefinition) -> str:
    fn_name = getattr(res.fn, "__name__", "")
    if fn_name and fn_name.isidentifier() and fn_name != "<lambda>":
        return fn_name
    return "my_resource"


def check_prompt(subject: Subject, prompt: PromptDefinition, sink: Sink) -> None:
    """``prompt-argument-description``."""
    for arg in prompt.arguments:
        desc = arg.get("description")
        if not (isinstance(desc, str) and desc.strip()):
            name = arg.get("name")
            sink.add("prompt-argument-description", subject,
                     f"prompt argument {name!r} has no description; clients show it in the form users fill in",
                     f"annotate it: {name}: Annotated[str, Field(description='...')]")
