"""``@resource(uri)``: a function serving one resource or a URI template of them."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from .. import _json
from ..content import BlobResourceContents, Resource, TextResourceContents, to_wire
from ..errors import ConfigurationError, ErrorContract, validate_contracts
from .checks import check_options
from .common import (
    Visibility,
    VisibilityRule,
    attach,
    caller_locals,
    check_name,
    is_async,
    make_caller,
    visibility_rule,
)
from .schema import ArgsPlan, args_plan
from .uritemplate import UriTemplate

__all__ = ["CacheHint", "ResourceDefinition", "resource"]

F = TypeVar("F", bound=Callable[..., Any])
RESOURCE_ATTR = "__mcpcore_resource__"


@dataclass(frozen=True, slots=True)
class CacheHint:
    """``ttlMs``/``cacheScope`` sent on 2026-07-28 cacheable results."""

    ttl_ms: int = 0
    scope: str = "private"

    def __post_init__(self) -> None:
        if not isinstance(self.ttl_ms, int) or self.ttl_ms < 0:
            raise ConfigurationError(f"cache hint ttl_ms must be an integer >= 0, got {self.ttl_ms!r}")
        if self.scope not in ("public", "private"):
            raise ConfigurationError(f"cache hint scope must be 'public' or 'private', got {self.scope!r}")


@dataclass(eq=False, slots=True)
class ResourceDefinition:
    """A resource (fixed URI) or resource template, computed once."""

    uri: str
    template: UriTemplate
    name: str
    fn: Callable[..., Any]
    args: ArgsPlan
    call: Callable[[dict[str, Any]], Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    lister: Callable[..., Any] | None = None
    list_call: Callable[[dict[str, Any]], Any] | None = None
    list_ctx_param: str | None = None
    complete: dict[str, Callable[..., Any]] = field(default_factory=dict)
    cache_hint: CacheHint | None = None
    errors: tuple[ErrorContract, ...] = ()
    auth: tuple[str, ...] = ()
    meta: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    listed: bool = True
    """Shown in ``resources/list`` (``False``: readable by URI only, like a skill's support files)."""
    visible_to: VisibilityRule = None
    """Who sees and may read it (``None``: every caller)."""
    direct: Callable[..., Any] | None = None
    """The function itself when it is a coroutine function (called without the thread hop)."""
    forward: Callable[[dict[str, Any], Any], Awaitable[dict[str, Any]]] | None = None
    """Served elsewhere (a proxied backend): the request's ``params`` and ``Inbound`` are handed over whole."""
    pipeline: Any = field(default=None, init=False, repr=False)
    """How it is invoked (``mcpcore.server.invoke.Pipeline``): built on its first call, kept."""

    @property
    def is_template(self) -> bool:
        return self.template.is_template

    def listing(self) -> dict[str, Any]:
        """The ``Resource`` entry for a fixed URI."""
        out: dict[str, Any] = {"uri": self.uri, "name": self.name}
        self._describe(out)
        if self.size is not None:
            out["size"] = self.size
        return out

    def template_listing(self) -> dict[str, Any]:
        """The ``ResourceTemplate`` entry for ``resources/templates/list``."""
        out: dict[str, Any] = {"uriTemplate": self.uri, "name": self.name}
        self._describe(out)
        return out

    def _describe(self, out: dict[str, Any]) -> None:
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        if self.mime_type:
            out["mimeType"] = self.mime_type
        if self.annotations:
            out["annotations"] = self.annotations
        if self.icons:
            out["icons"] = self.icons
        if self.meta:
            out["_meta"] = self.meta

    def contents(self, uri: str, value: Any) -> list[dict[str, Any]]:
        """Turn a handler's return value into ``contents[]``."""
        if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (TextResourceContents, BlobResourceContents))
            or (isinstance(v, dict) and ("text" in v or "blob" in v)) for v in value
        ):
            return [self._one(uri, v) for v in value]
        return [self._one(uri, value)]

    def _one(self, uri: str, value: Any) -> dict[str, Any]:
        if isinstance(value, str):
            return {"uri": uri, "mimeType": self.mime_type or "text/plain", "text": value}
        if isinstance(value, (bytes, bytearray, memoryview)):
            return to_wire(BlobResourceContents(uri=uri, mime_type=self.mime_type or "application/octet-stream",
                                                blob=bytes(value)))
        if isinstance(value, (TextResourceContents, BlobResourceContents)):
            return to_wire(value)
        if isinstance(value, dict) and ("text" in value or "blob" in value) and "uri" in value:
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True)
        return {"uri": uri, "mimeType": self.mime_type or "application/json", "text": _json.dumps_str(value)}


def build_resource(
    fn: Callable[..., Any],
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    annotations: Mapping[str, Any] | None = None,
    list: Callable[..., Any] | None = None,
    complete: Mapping[str, Callable[..., Any]] | None = None,
    cache_hint: CacheHint | None = None,
    errors: Sequence[ErrorContract] = (),
    auth: Sequence[str] = (),
    meta: Mapping[str, Any] | None = None,
    icons: Sequence[Mapping[str, Any]] | None = None,
    visible_to: Visibility | None = None,
    localns: dict[str, Any] | None = None,
) -> ResourceDefinition:
    """Build a :class:`ResourceDefinition`; raises :class:`ConfigurationError` on mistakes."""
    if not isinstance(uri, str) or ("://" not in uri and not uri.startswith(("urn:", "data:"))):
        raise ConfigurationError(f"resource URI {uri!r} must be an absolute URI or URI template")
    template = UriTemplate(uri)
    res_name = check_name("resource", name if name is not None else fn.__name__)
    owner = f"resource {uri!r}"
    localns = localns if localns is not None else caller_locals()
    plan = args_plan(fn, owner, model_name=f"{res_name.replace('.', '_').replace('-', '_')}_params",
                     localns=localns, kind="resource")
    fields = plan.model.model_fields
    names = set(plan.field_keys)
    missing = [v for v in template.variables if v not in names]
    if missing:
        raise ConfigurationError(f"{owner}: template variable(s) {', '.join(missing)} have no matching parameter")
    for fname, f in fields.items():
        key = f.alias or fname
        if key not in template.variables and f.is_required():
            raise ConfigurationError(f"{owner}: parameter {key!r} is not in the URI template and has no default")
    if template.is_template and list is not None and not callable(list):
        raise ConfigurationError(f"{owner}: list= must be callable")
    for var, fn_c in (complete or {}).items():
        if var not in template.variables:
            raise ConfigurationError(f"{owner}: completion for unknown template variable {var!r}")
        if not callable(fn_c):
            raise ConfigurationError(f"{owner}: completion for {var!r} must be callable")
    list_call = None
    list_ctx = None
    if list is not None:
        lplan = args_plan(list, f"{owner} list=", model_name="list_params", allow_model=False, localns=localns,
                          kind="resource")
        if lplan.names:
            raise ConfigurationError(f"{owner}: list= takes no arguments except an optional Context")
        list_call = make_caller(list)
        list_ctx = lplan.ctx_param
    doc = description if description is not None else (fn.__doc__ and inspect.getdoc(fn))
    return ResourceDefinition(
        uri=uri,
        template=template,
        name=res_name,
        fn=fn,
        args=plan,
        call=make_caller(fn),
        direct=fn if is_async(fn) else None,
        title=title,
        description=doc or None,
        mime_type=mime_type,
        size=size,
        annotations=dict(annotations) if annotations else None,
        lister=list,
        list_call=list_call,
        list_ctx_param=list_ctx,
        complete=dict(complete or {}),
        cache_hint=cache_hint,
        errors=validate_contracts(owner, errors),
        auth=tuple(auth),
        meta=dict(meta) if meta else None,
        icons=_icons(owner, icons),
        visible_to=visibility_rule(owner, visible_to),
    )


def resource(uri: str, **options: Any) -> Callable[[F], F]:
    """Declare a resource (fixed URI) or a resource template (RFC 6570 URI template).

    The decorated function receives the template variables as parameters (or one pydantic
    params model) and an optional ``ctx: Context``. It may return ``str`` (text), ``bytes``
    (blob), resource contents, a list of them, or any JSON value (sent as ``application/json``).

    Args:
        uri: the URI, or a template such as ``"notes://{id}"``.
        name, title, description, mime_type, size, annotations: listing metadata.
        list: for a template, a callable returning the concrete :class:`Resource` entries it
            offers in ``resources/list``.
        complete: ``{variable: fn(value, arguments) -> list[str]}`` for ``completion/complete``.
        cache_hint: ``CacheHint(ttl_ms, scope)`` for 2026-07-28 ``resources/read``.
        errors, auth, meta, visible_to: as for tools.
        icons: ``[{"src": "https://.../icon.png", "mimeType": "image/png", "sizes": ["48x48"]}]``
            shown by clients beside the resource (a template's concrete entries inherit them).
    """
    def decorate(f: F) -> F:
        if not callable(f):
            raise TypeError("@resource decorates a function")
        check_options("resource", str(uri), options, RESOURCE_OPTIONS)
        return attach(f, RESOURCE_ATTR, build_resource(f, uri, **options))  # type: ignore[no-any-return]

    if callable(uri):
        raise TypeError("@resource needs a URI: @resource('scheme://{id}')")
    return decorate


RESOURCE_OPTIONS = frozenset(inspect.signature(build_resource).parameters) - {"fn", "uri", "localns"}
"""The options ``@resource(uri, ...)`` takes."""


def _icons(owner: str, icons: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Check ``Icon`` objects: a ``src`` URI, optional ``mimeType``, ``sizes`` and ``theme``."""
    if not icons:
        return None
    out: list[dict[str, Any]] = []
    for icon in icons:
        if not isinstance(icon, Mapping) or not isinstance(icon.get("src"), str) or ":" not in icon["src"]:
            raise ConfigurationError(f"{owner}: each icon needs a 'src' URI (https: or data:), got {icon!r}")
        sizes = icon.get("sizes")
        if sizes is not None and (not isinstance(sizes, (list, tuple)) or not all(isinstance(x, str) for x in sizes)):
            raise ConfigurationError(f"{owner}: icon 'sizes' must be a list of strings like '48x48' or 'any'")
        if icon.get("theme") not in (None, "light", "dark"):
            raise ConfigurationError(f"{owner}: icon 'theme' must be 'light' or 'dark'")
        out.append({k: list(v) if k == "sizes" else v for k, v in icon.items()})
    return out


def resource_entries(items: Any) -> list[dict[str, Any]]:
    """Normalise what a ``list=`` callable returned."""
    out: list[dict[str, Any]] = []
    for it in items or ():
        if isinstance(it, Resource):
            out.append(to_wire(it))
        elif isinstance(it, dict) and "uri" in it and "name" in it:
            out.append(it)
        else:
            raise TypeError("list= must return Resource objects or dicts with 'uri' and 'name'")
    return out
