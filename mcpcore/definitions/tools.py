"""``@tool``: a plain function becomes an MCP tool, described once at decoration time."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, overload

from pydantic import BaseModel

from ..content import CONTENT_TYPES, ToolResult
from ..errors import ERROR_CONTRACT_META, ConfigurationError, ErrorContract, validate_contracts
from .checks import check_options
from .common import (
    Visibility,
    VisibilityRule,
    attach,
    caller_locals,
    check_name,
    description_of,
    is_async,
    make_caller,
    type_hints,
    visibility_rule,
)
from .schema import ArgsPlan, OutputPlan, args_plan, json_schema, output_plan, plan_input_schema
from .tasks import TaskSupport, task_support

if TYPE_CHECKING:
    from ..extensions.apps import App

__all__ = ["ToolDefinition", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
TOOL_ATTR = "__mcpcore_tool__"

_ANNOTATION_KEYS = {
    "title": "title",
    "read_only_hint": "readOnlyHint", "readOnlyHint": "readOnlyHint", "read_only": "readOnlyHint",
    "destructive_hint": "destructiveHint", "destructiveHint": "destructiveHint", "destructive": "destructiveHint",
    "idempotent_hint": "idempotentHint", "idempotentHint": "idempotentHint", "idempotent": "idempotentHint",
    "open_world_hint": "openWorldHint", "openWorldHint": "openWorldHint", "open_world": "openWorldHint",
}
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def _annotations(owner: str, raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not raw:
        return None
    out: dict[str, Any] = {}
    for k, v in raw.items():
        key = _ANNOTATION_KEYS.get(k)
        if key is None:
            raise ConfigurationError(f"{owner}: unknown annotation {k!r}")
        if key != "title" and not isinstance(v, bool):
            raise ConfigurationError(f"{owner}: annotation {k!r} must be a bool")
        out[key] = v
    return out


def _is_content_annotation(ann: Any) -> bool:
    import typing

    if ann is ToolResult:
        return True
    if isinstance(ann, type) and issubclass(ann, CONTENT_TYPES):
        return True
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin in (list, Sequence) and args:
        return _is_content_annotation(args[0])
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        return all(_is_content_annotation(a) for a in args)
    return False


@dataclass(eq=False, slots=True)
class ToolDefinition:
    """Everything a server needs to list and call one tool, computed once."""

    name: str
    description: str
    fn: Callable[..., Any]
    args: ArgsPlan
    call: Callable[[dict[str, Any]], Any]
    title: str | None = None
    output: OutputPlan | None = None
    returns_content: bool = False
    format: Callable[[Any], Sequence[Any]] | None = None
    annotations: dict[str, Any] | None = None
    errors: tuple[ErrorContract, ...] = ()
    enrichment: type[BaseModel] | None = None
    enrichment_trailer: Mapping[str, Any] = field(default_factory=dict)
    auth: tuple[str, ...] = ()
    meta: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    input_schema: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    header_params: dict[str, str] = field(default_factory=dict)
    direct: Callable[..., Any] | None = None
    """The function itself when it is a coroutine function (called without the thread hop)."""
    app: App | None = None
    """The MCP App (HTML view) this tool opens, if any."""
    visible_to: VisibilityRule = None
    """Who sees and may call the tool (``None``: every caller)."""
    task: TaskSupport | None = None
    """How the tool runs as a task (``None``: it never does)."""
    forward: Callable[[dict[str, Any], Any], Awaitable[dict[str, Any]]] | None = None
    """Served elsewhere (a proxied backend): the request's ``params`` and ``Inbound`` are handed over whole."""
    unwrapped: bool = field(init=False, default=False)
    """2026-07-28 carries a non-object result as is (any JSON ``structuredContent``)."""
    pipeline: Any = field(default=None, init=False, repr=False)
    """How it is invoked (``mcpcore.server.invoke.Pipeline``): built on its first call, kept."""

    def __post_init__(self) -> None:
        self.unwrapped = self.output is not None and self.output.wrap and self.enrichment is None

    def to_wire(self, modern: bool = False) -> dict[str, Any]:
        """The ``Tool`` object of ``tools/list`` (2025 era, or 2026-07-28 when ``modern``)."""
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            out["outputSchema"] = self.output.inner_schema if modern and self.unwrapped and self.output else \
                self.output_schema
        if self.annotations:
            out["annotations"] = self.annotations
        if self.icons:
            out["icons"] = self.icons
        if self.meta:
            out["_meta"] = self.meta
        if self.task is not None and not modern:  # 2026-07-28: the server alone decides
            out["execution"] = {"taskSupport": self.task.mode}
        return out


def _enrichment_schema(owner: str, output: dict[str, Any], enrichment: type[BaseModel]) -> dict[str, Any]:
    extra = json_schema(enrichment)
    props = dict(output.get("properties", {}))
    for k, v in extra.get("properties", {}).items():
        if k in props:
            raise ConfigurationError(f"{owner}: enrichment field {k!r} collides with an output field")
        props[k] = v
    merged = {**output, "properties": props}
    req = list(output.get("required", [])) + list(extra.get("required", []))
    if req:
        merged["required"] = req
    defs = {**output.get("$defs", {}), **extra.get("$defs", {})}
    if defs:
        merged["$defs"] = defs
    return merged


def _header_params(owner: str, schema: dict[str, Any], declared: Mapping[str, str] | None) -> dict[str, str]:
    """Mark arguments to be mirrored into ``Mcp-Param-<Name>`` HTTP headers (``x-mcp-header``)."""
    out: dict[str, str] = {}
    props = schema.get("properties", {})
    for arg, props_schema in props.items():
        if isinstance(props_schema, dict) and "x-mcp-header" in props_schema:
            out[arg] = props_schema["x-mcp-header"]
    for arg, header in (declared or {}).items():
        if arg not in props:
            raise ConfigurationError(f"{owner}: header parameter {arg!r} is not an argument")
        props[arg]["x-mcp-header"] = header
        out[arg] = header
    seen: set[str] = set()
    for arg, header in out.items():
        if not isinstance(header, str) or not _HEADER_NAME.match(header):
            raise ConfigurationError(f"{owner}: header name {header!r} for {arg!r} is not an RFC 9110 token")
        if header.lower() in seen:
            raise ConfigurationError(f"{owner}: header name {header!r} is used twice")
        seen.add(header.lower())
        t = props[arg].get("type")
        if t not in ("string", "integer", "boolean"):
            raise ConfigurationError(f"{owner}: header parameter {arg!r} must be a string, integer or boolean")
    return out


def build_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    format: Callable[[Any], Sequence[Any]] | None = None,
    errors: Sequence[ErrorContract] = (),
    enrichment: type[BaseModel] | None = None,
    enrichment_trailer: Mapping[str, Any] | None = None,
    auth: Sequence[str] = (),
    meta: Mapping[str, Any] | None = None,
    icons: Sequence[Mapping[str, Any]] | None = None,
    structured: bool = True,
    header_params: Mapping[str, str] | None = None,
    input_schema: Mapping[str, Any] | None = None,
    app: App | None = None,
    visible_to: Visibility | None = None,
    task: TaskSupport | str | None = None,
    localns: dict[str, Any] | None = None,
) -> ToolDefinition:
    """Build a :class:`ToolDefinition` from ``fn``; raises :class:`ConfigurationError` on mistakes."""
    tool_name = check_name("tool", name if name is not None else fn.__name__)
    owner = f"tool {tool_name!r}"
    desc = description_of("tool", tool_name, description, fn)
    plan = args_plan(fn, owner, model_name=f"{tool_name.replace('.', '_').replace('-', '_')}_arguments",
                     localns=localns)
    if input_schema is not None:
        if not isinstance(input_schema, Mapping) or input_schema.get("type") != "object":
            raise ConfigurationError(f"{owner}: input_schema must be a JSON Schema object with type 'object'")
        advertised = dict(input_schema)
    else:
        advertised = plan_input_schema(plan, owner)
    hparams = _header_params(owner, advertised, header_params)
    ret = type_hints(fn, localns).get("return", None)
    output: OutputPlan | None = None
    returns_content = False
    if ret is not None and ret is not type(None):
        if _is_content_annotation(ret):
            returns_content = True
        elif structured:
            output = output_plan(ret, owner)
    if enrichment is not None and not (isinstance(enrichment, type) and issubclass(enrichment, BaseModel)):
        raise ConfigurationError(f"{owner}: enrichment= must be a pydantic model class")
    output_schema = output.schema if output is not None else None
    if enrichment is not None:
        base = output_schema or {"type": "object", "properties": {}}
        output_schema = _enrichment_schema(owner, base, enrichment)
    for scope in auth:
        if not isinstance(scope, str) or not scope or any(c.isspace() for c in scope):
            raise ConfigurationError(f"{owner}: auth scope {scope!r} must be a non-empty string without spaces")
    tool_meta = dict(meta) if meta else None
    contracts = validate_contracts(owner, errors)
    if contracts:  # advertised where no client reads it as anything else (docs/errors.md)
        if tool_meta and ERROR_CONTRACT_META in tool_meta:
            raise ConfigurationError(f"{owner}: meta key {ERROR_CONTRACT_META!r} is mcpcore's: it advertises the "
                                     "errors= contract; remove it from meta=")
        tool_meta = {**(tool_meta or {}), ERROR_CONTRACT_META: [c.to_json() for c in contracts]}
    if app is not None:
        from ..extensions.apps import App as _App

        if not isinstance(app, _App):
            raise ConfigurationError(f"{owner}: app= must be an mcpcore.extensions.apps.App")
        app = app.for_tool(tool_name)
        ui = app.tool_meta()
        tool_meta = {**(tool_meta or {}), **ui, "ui": {**dict((tool_meta or {}).get("ui") or {}), **ui["ui"]}}
    return ToolDefinition(
        name=tool_name,
        description=desc,
        fn=fn,
        args=plan,
        call=make_caller(fn),
        title=title,
        output=output,
        returns_content=returns_content,
        format=format,
        annotations=_annotations(owner, annotations),
        errors=contracts,
        enrichment=enrichment,
        enrichment_trailer=dict(enrichment_trailer or {}),
        auth=tuple(auth),
        meta=tool_meta,
        icons=[dict(i) for i in icons] if icons else None,
        input_schema=advertised,
        output_schema=output_schema,
        header_params=hparams,
        direct=fn if is_async(fn) else None,
        app=app,
        visible_to=visibility_rule(owner, visible_to),
        task=task_support(owner, task),
    )


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    format: Callable[[Any], Sequence[Any]] | None = None,
    errors: Sequence[ErrorContract] = (),
    enrichment: type[BaseModel] | None = None,
    enrichment_trailer: Mapping[str, Any] | None = None,
    auth: Sequence[str] = (),
    meta: Mapping[str, Any] | None = None,
    icons: Sequence[Mapping[str, Any]] | None = None,
    structured: bool = True,
    header_params: Mapping[str, str] | None = None,
    input_schema: Mapping[str, Any] | None = None,
    app: App | None = None,
    visible_to: Visibility | None = None,
    task: TaskSupport | str | None = None,
) -> Callable[[F], F]: ...
def tool(fn: Any = None, /, **options: Any) -> Any:
    """Declare a tool. Works bare (``@tool``) or with options (``@tool(name=..., ...)``).

    The function is returned unchanged (still directly callable in tests); its definition is
    attached and collected by :meth:`McpApp.include` or ``McpApp(tools=[...])``. A bound method
    (``tool(obj.method)``) comes back as a callable carrying the definition.

    Args:
        name: wire name (default: the function name).
        title: display name.
        description: what the tool does (default: the docstring; one of them is required).
        annotations: behaviour hints (``read_only_hint``/``readOnlyHint``, ``destructive_hint``, ...).
        format: renders the return value into ``content[]`` blocks (default: JSON text).
        errors: the declared failures (:class:`ErrorContract`), reachable through ``ctx.fail``.
        enrichment: a pydantic model of the fields ``ctx.enrich`` may add to the result.
        enrichment_trailer: per-field ``{"label": str}`` or ``{"render": callable}`` for the trailer.
        auth: scopes a caller must hold.
        meta: ``_meta`` of the tool in ``tools/list``.
        structured: ``False`` to send no ``outputSchema``/``structuredContent``.
        header_params: ``{argument: HeaderName}`` mirrored into ``Mcp-Param-<HeaderName>`` (2026-07-28).
        input_schema: advertise this JSON Schema instead of the one generated from the signature
            (for keywords pydantic cannot express); arguments are still validated by the signature.
        app: an :class:`~mcpcore.extensions.apps.App` (MCP Apps): the HTML view this tool opens,
            served as a ``ui://`` resource, with the text fallback for hosts without Apps.
        visible_to: who sees the tool: scopes the caller must all hold, or a function of the
            caller's ``Context`` returning ``bool``. Lists leave it out for anyone else, and a
            call from them is refused as for an unknown tool.
        task: ``"optional"``, ``"required"`` or a :class:`~mcpcore.definitions.tasks.TaskSupport`:
            the tool may (or must) run as a task, whose result the client collects later
            (docs/tasks.md). Default: an ordinary call.
    """
    def decorate(f: Any, localns: dict[str, Any] | None = None) -> Any:
        if not callable(f):
            raise TypeError("@tool decorates a function")
        check_options("tool", options.get("name") or getattr(f, "__name__", "?"), options, TOOL_OPTIONS,
                      ANNOTATION_OPTIONS)
        return attach(f, TOOL_ATTR, build_tool(f, localns=localns or caller_locals(), **options))

    if fn is not None:
        if options:
            raise TypeError("use @tool or @tool(...)")
        if isinstance(fn, str):
            raise TypeError(f"@tool takes options by keyword: @tool(name={fn!r})")
        return decorate(fn, caller_locals())
    return decorate


TOOL_OPTIONS = frozenset(inspect.signature(build_tool).parameters) - {"fn", "localns"}
"""The options ``@tool(...)`` takes."""
ANNOTATION_OPTIONS = frozenset(_ANNOTATION_KEYS) - {"title"}
"""Behaviour hints, which ``@tool`` takes in ``annotations=``, not as options."""
