"""MCP Apps (SEP-1865, ``io.modelcontextprotocol/ui``): an HTML view for a tool, declared once.

A tool opens an app by naming a ``ui://`` resource in ``_meta.ui.resourceUri``; the host reads
that resource (MIME type ``text/html;profile=mcp-app``, with its sandbox settings in
``_meta.ui``) and renders the tool's results in it. Hosts without Apps support ignore all of
this and show the tool's text content, so results keep a real text fallback::

    chart = App(html=Path("chart.html"), csp=Csp(connect_domains=["https://api.example.com"]),
                fallback=lambda data: f"{len(data['points'])} points; open in an Apps host for the chart")

    @tool(app=chart)
    def plot(series: str) -> Plot: ...

mcpcore then serves ``ui://plot/view.html``, puts both the nested ``_meta.ui.resourceUri`` and
the older flat ``_meta["ui/resourceUri"]`` on the tool, declares the extension, and gives a
caller that did not declare Apps support the ``fallback`` text first in ``content``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..protocol.extensions import APP_MIME_TYPE, APPS, client_extension

if TYPE_CHECKING:
    from ..context import Context
    from ..definitions.resources import ResourceDefinition

__all__ = ["APP_MIME_TYPE", "App", "Csp", "csp_problems", "supports_apps"]

PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
VISIBILITY = ("model", "app")
FLAT_KEY = "ui/resourceUri"
"""The deprecated flat tool ``_meta`` key some hosts still read."""
_SNAKE = {"connect_domains": "connectDomains", "resource_domains": "resourceDomains",
          "frame_domains": "frameDomains", "base_uri_domains": "baseUriDomains", "clipboard_write": "clipboardWrite"}
_ORIGIN = re.compile(r"^(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                     r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?$")


@dataclass(frozen=True, slots=True)
class Csp:
    """The origins an app's sandbox may reach (hosts deny everything else).

    Each entry is an origin such as ``https://api.example.com``, ``wss://live.example.com`` or
    ``https://*.cdn.example.com``.
    """

    connect_domains: Sequence[str] = ()
    """fetch/XHR/WebSocket targets (``connect-src``)."""
    resource_domains: Sequence[str] = ()
    """Scripts, styles, images, fonts and media (``script-src``, ``img-src``, ...)."""
    frame_domains: Sequence[str] = ()
    """Nested iframes (``frame-src``)."""
    base_uri_domains: Sequence[str] = ()
    """Allowed ``<base href>`` targets (``base-uri``)."""

    def to_wire(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for key, value in (("connectDomains", self.connect_domains), ("resourceDomains", self.resource_domains),
                           ("frameDomains", self.frame_domains), ("baseUriDomains", self.base_uri_domains)):
            if value:
                out[key] = list(value)
        return out


def _csp(csp: Csp | Mapping[str, Any] | None) -> dict[str, Any]:
    if csp is None:
        return {}
    if isinstance(csp, Csp):
        return csp.to_wire()
    if not isinstance(csp, Mapping):
        raise ConfigurationError(f"app csp must be a Csp or a mapping, got {type(csp).__name__}")
    return {_SNAKE.get(k, k): list(v) if isinstance(v, (list, tuple)) else v for k, v in csp.items()}


def csp_problems(csp: Mapping[str, Any]) -> list[str]:
    """What is wrong with a wire-form CSP object (unknown keys, entries that are not origins)."""
    out: list[str] = []
    for key, value in csp.items():
        if key not in CSP_KEYS:
            out.append(f"unknown key {key!r} (expected one of {', '.join(CSP_KEYS)})")
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            out.append(f"{key} must be a list of origin strings")
            continue
        out.extend(f"{key} entry {v!r} is not an origin like 'https://api.example.com' or 'https://*.example.com'"
                   for v in value if not _ORIGIN.match(v))
    return out


def supports_apps(ctx_or_caps: Context | Mapping[str, Any] | None) -> bool:
    """Whether the caller declared MCP Apps support for HTML views (its ``mimeTypes`` include
    ``text/html;profile=mcp-app``, or it declared the extension without a list)."""
    caps = getattr(ctx_or_caps, "client_capabilities", ctx_or_caps)
    settings = client_extension(caps if isinstance(caps, Mapping) else None, APPS)
    if settings is None:
        return False
    mimes = settings.get("mimeTypes")
    return mimes is None or (isinstance(mimes, list) and APP_MIME_TYPE in mimes)


@dataclass(eq=False, slots=True)
class App:
    """An MCP App for a tool: its view (HTML from a string or a file, or an existing ``ui://``
    resource), sandbox settings, visibility and the text given to hosts without Apps.

    Args:
        uri: the ``ui://`` resource (default ``ui://<tool name>/view.html``). Without ``html``
            and ``file`` it names a resource registered elsewhere (``mcpcore lint`` checks it).
        html: the view's HTML document.
        file: a file holding the HTML, read on each ``resources/read`` (edits show up live).
        csp: :class:`Csp` or ``{"connectDomains": [...], ...}``.
        permissions: browser features the view asks for: ``camera``, ``microphone``,
            ``geolocation``, ``clipboardWrite``.
        domain: a dedicated sandbox origin (host-specific format).
        prefers_border: ask the host for (``True``) or against (``False``) a border.
        visibility: ``["model", "app"]`` (default), or ``["app"]`` for a tool only the view calls.
        fallback: text for a caller without Apps support, put first in ``content``: a string, or
            ``fn(structuredContent) -> str``.
        name, title, description: the resource's listing metadata.
    """

    uri: str | None = None
    html: str | None = None
    file: str | os.PathLike[str] | None = None
    csp: Csp | Mapping[str, Any] | None = None
    permissions: Iterable[str] = ()
    domain: str | None = None
    prefers_border: bool | None = None
    visibility: Sequence[str] | None = None
    fallback: str | Callable[[Any], str] | None = None
    name: str | None = None
    title: str | None = None
    description: str | None = None
    _definition: ResourceDefinition | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.uri is not None and (not isinstance(self.uri, str) or not self.uri.startswith("ui://")):
            raise ConfigurationError(f"app uri {self.uri!r} must use the ui:// scheme")
        if self.html is not None and self.file is not None:
            raise ConfigurationError("an app takes html= or file=, not both")
        if self.uri is None and self.html is None and self.file is None:
            raise ConfigurationError("an app needs html=, file= or the uri= of a ui:// resource served elsewhere")
        perms = [_SNAKE.get(p, p) for p in self.permissions]
        unknown = [p for p in perms if p not in PERMISSIONS]
        if unknown:
            raise ConfigurationError(f"unknown app permission(s) {unknown}; known: {', '.join(PERMISSIONS)}")
        self.permissions = tuple(perms)
        if self.visibility is not None:
            vis = list(self.visibility)
            if not vis or any(v not in VISIBILITY for v in vis) or len(set(vis)) != len(vis):
                raise ConfigurationError(f"app visibility {vis!r} must be a non-empty subset of ['model', 'app']")
            self.visibility = tuple(vis)
        self.csp = _csp(self.csp)
        if self.fallback is not None and not (isinstance(self.fallback, str) or callable(self.fallback)):
            raise ConfigurationError("app fallback must be a string or a callable")

    @property
    def serves_view(self) -> bool:
        """Whether mcpcore serves the view itself (``html=`` or ``file=``)."""
        return self.html is not None or self.file is not None

    def for_tool(self, tool_name: str) -> App:
        """This app with its URI settled: its own, or ``ui://<tool_name>/view.html``."""
        if self.uri is not None:
            return self
        return App(f"ui://{tool_name}/view.html", self.html, self.file, self.csp, self.permissions, self.domain,
                   self.prefers_border, self.visibility, self.fallback, self.name or f"{tool_name}-view", self.title,
                   self.description or f"The MCP App view of tool {tool_name}.")

    def ui_meta(self) -> dict[str, Any]:
        """``_meta.ui`` of the resource and of each ``resources/read`` item."""
        out: dict[str, Any] = {}
        if self.csp:
            out["csp"] = dict(self.csp)  # type: ignore[arg-type]
        if self.permissions:
            out["permissions"] = {p: {} for p in self.permissions}
        if self.domain is not None:
            out["domain"] = self.domain
        if self.prefers_border is not None:
            out["prefersBorder"] = self.prefers_border
        return out

    def tool_meta(self) -> dict[str, Any]:
        """The tool's ``_meta``: nested ``ui.resourceUri`` (and visibility) plus the flat key."""
        ui: dict[str, Any] = {"resourceUri": self.uri}
        if self.visibility is not None:
            ui["visibility"] = list(self.visibility)
        return {"ui": ui, FLAT_KEY: self.uri}

    @property
    def definition(self) -> ResourceDefinition | None:
        """The ``ui://`` resource mcpcore serves for this app (``None`` for an external one)."""
        if self._definition is None and self.serves_view and self.uri is not None:
            from ..definitions.resources import build_resource

            meta = {"ui": self.ui_meta()}
            uri, html, file = self.uri, self.html, self.file

            def read() -> dict[str, Any]:
                text = html if html is not None else Path(file).read_text(encoding="utf-8")  # type: ignore[arg-type]
                return {"uri": uri, "mimeType": APP_MIME_TYPE, "text": text, "_meta": meta}

            self._definition = build_resource(read, uri, name=self.name or "app-view", title=self.title,
                                              description=self.description or "An MCP App view.",
                                              mime_type=APP_MIME_TYPE, meta=meta, localns={})
        return self._definition

    def shape(self, result: dict[str, Any], caps: Mapping[str, Any] | None) -> dict[str, Any]:
        """A successful ``CallToolResult`` as this caller should get it: unchanged for an Apps
        host; for any other caller, with the ``fallback`` text first (or, with no fallback and
        no text at all, the structured content as JSON text)."""
        if result.get("isError") or supports_apps(caps):
            return result
        content = list(result.get("content") or ())
        if self.fallback is not None:
            text = self.fallback if isinstance(self.fallback, str) else self.fallback(result.get("structuredContent"))
            content.insert(0, {"type": "text", "text": str(text)})
        elif not any(isinstance(b, dict) and b.get("type") == "text" for b in content) \
                and "structuredContent" in result:
            from .. import _json

            content.insert(0, {"type": "text", "text": _json.dumps_str(result["structuredContent"])})
        return {**result, "content": content}
