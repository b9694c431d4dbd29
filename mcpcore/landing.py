"""The landing page (``GET /``) and the server card (``/.well-known/mcp.json``).

Both describe only what an anonymous caller may already learn through ``tools/list`` and friends:
names, descriptions, annotations, the endpoint and whether auth is required. Neither reads a
token, so with auth on they list no definitions (only an authenticated ``tools/list`` shows
those), and a definition declared ``visible_to=`` is never listed (not every caller sees it, and
the card is cached publicly). No settings, secrets or filesystem paths are ever shown. On by
default for a standalone app, off when mounted.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Protocol

from . import _json
from ._version import __version__
from .protocol.versions import LEGACY_VERSIONS, MODERN_VERSIONS

if TYPE_CHECKING:
    from .auth.base import Authenticator
    from .config import Settings
    from .server.core import ServerCore
    from .server.registry import Registry

__all__ = ["Described", "landing_page", "server_card"]


class Described(Protocol):
    """What the landing page and the server card read of an app (:class:`~mcpcore.McpApp`)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def path(self) -> str: ...

    @property
    def authenticator(self) -> Authenticator | None: ...

    @property
    def registry(self) -> Registry: ...

    @property
    def core(self) -> ServerCore: ...

    @property
    def server_info(self) -> dict[str, Any]: ...

    @property
    def instructions(self) -> str | None: ...


def _endpoint_url(app: Described, base: str) -> str:
    public = app.settings.public_url
    return (public.rstrip("/") if public else base) + app.path


def _group(tool: Any) -> str:
    ann = tool.annotations or {}
    if ann.get("readOnlyHint"):
        return "read-only"
    if ann.get("destructiveHint", True) is False:
        return "changes data"
    return "destructive"


def _public(app: Described) -> tuple[list[Any], list[Any], list[Any]]:
    """The tools, listed resources and templates, and prompts every caller sees (none with auth on)."""
    if app.authenticator is not None:
        return [], [], []
    r = app.registry
    return ([t for t in r.tools.values() if t.visible_to is None],
            [d for d in [*r.resources.values(), *r.templates] if d.visible_to is None and d.listed],
            [p for p in r.prompts.values() if p.visible_to is None])


def server_card(app: Described, base: str) -> dict[str, Any]:
    """The server card (SEP-1649): identity, endpoint, revisions, capabilities, definitions."""
    card: dict[str, Any] = {
        "name": app.server_info["name"],
        "version": app.server_info["version"],
        "protocolVersions": list(MODERN_VERSIONS) + list(reversed(LEGACY_VERSIONS)),
        "transports": [{"type": "streamable-http", "url": _endpoint_url(app, base)}],
        "capabilities": app.core.capabilities(),
        "authentication": {"required": app.authenticator is not None,
                           "schemes": ["bearer"] if app.authenticator is not None else []},
        "framework": {"name": "mcpcore", "version": __version__},
    }
    if app.authenticator is None:
        tools, resources, prompts = _public(app)
        card["tools"] = [{"name": t.name, "title": t.title, "description": t.description,
                          "annotations": t.annotations or {}} for t in tools]
        card["resources"] = [{"uri": d.uri, "name": d.name, "description": d.description} for d in resources]
        card["prompts"] = [{"name": p.name, "description": p.description} for p in prompts]
    for key in ("title", "description", "websiteUrl"):
        if key in app.server_info:
            card[key] = app.server_info[key]
    if app.instructions:
        card["instructions"] = app.instructions
    return card


_CSS = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2330}
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #dde;padding-bottom:.2rem}
.muted{color:#667}code,pre{background:#f4f5f8;border-radius:4px}pre{padding:.8rem;overflow:auto}
li{margin:.3rem 0}.tag{font-size:12px;padding:1px 6px;border-radius:8px;background:#eef;margin-left:.4rem}
.destructive .tag{background:#fde2e2}.read-only .tag{background:#e2f5e6}
"""


def landing_page(app: Described, base: str) -> str:
    """An HTML page listing the tools (grouped), resources and prompts, with client snippets."""
    e = html.escape
    url = _endpoint_url(app, base)
    name = app.server_info["name"]
    groups: dict[str, list[Any]] = {"read-only": [], "changes data": [], "destructive": []}
    listed = app.authenticator is None
    tools, resources, prompts = _public(app)
    for t in tools:
        groups[_group(t)].append(t)
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{e(name)}</title>"
             f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{_CSS}</style></head><body>",
             f"<h1>{e(app.server_info.get('title') or name)}</h1>",
             f"<p class=muted>MCP server {e(app.server_info['version'])} &middot; endpoint <code>{e(url)}</code>"
             f"{' &middot; bearer token required' if app.authenticator is not None else ''}</p>"]
    if app.instructions:
        parts.append(f"<p>{e(app.instructions)}</p>")
    parts.append("<h2 id=tools>Tools</h2>" if listed else
                 "<p>Sign in with a bearer token to list this server's tools, resources and prompts.</p>")
    for group, members in groups.items():
        if members:
            parts.append(f"<h3>{e(group.capitalize())}</h3><ul class='{e(group)}'>")
            parts += [f"<li><code>{e(t.name)}</code><span class=tag>{e(group)}</span> &mdash; {e(t.description)}</li>"
                      for t in members]
            parts.append("</ul>")
    if resources:
        parts.append("<h2 id=resources>Resources</h2><ul>")
        parts += [f"<li><code>{e(d.uri)}</code> &mdash; {e(d.description or d.name)}</li>" for d in resources]
        parts.append("</ul>")
    if prompts:
        parts.append("<h2 id=prompts>Prompts</h2><ul>")
        parts += [f"<li><code>{e(p.name)}</code> &mdash; {e(p.description)}</li>" for p in prompts]
        parts.append("</ul>")
    config = _json.dumps({"mcpServers": {name: {"type": "http", "url": url}}}).decode()
    parts.append("<h2 id=connect>Connect</h2>")
    parts.append(f"<p>Client configuration (Claude Desktop, Cursor and other MCP hosts):</p><pre>{e(config)}</pre>")
    parts.append("<p>Python (<code>pip install mcp</code>):</p><pre>"
                 + e(f'from mcp import Client\n\nasync with Client("{url}") as client:\n'
                     "    tools = await client.list_tools()") + "</pre>")
    parts.append("<p>TypeScript (<code>npm i @modelcontextprotocol/client</code>):</p><pre>"
                 + e("import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';\n"
                     "const client = new Client({ name: 'my-app', version: '1.0.0' });\n"
                     f"await client.connect(new StreamableHTTPClientTransport(new URL('{url}')));") + "</pre>")
    parts.append("<p class=muted>Server card: <a href='/.well-known/mcp.json'>/.well-known/mcp.json</a>"
                 " &middot; served by mcpcore</p></body></html>")
    return "".join(parts)
