"""Declaring and negotiating protocol extensions (``capabilities.extensions``, SEP-2133).

An extension is named by a prefixed identifier (``io.modelcontextprotocol/ui``,
``com.example/audit``) and carries a settings object. A server lists the extensions it serves
in ``initialize`` (2025 era) and ``server/discover`` (2026-07-28); a client lists the ones it
supports in ``initialize`` or in each request's ``clientCapabilities``. When only one side
supports an extension, the other falls back to core behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError

__all__ = ["APPS", "APP_MIME_TYPE", "SKILLS", "TASKS", "check_extensions", "client_extension", "client_extensions"]

APPS = "io.modelcontextprotocol/ui"
"""MCP Apps (SEP-1865): tools with an HTML view served from a ``ui://`` resource."""
APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of an MCP App's ``ui://`` resource (and of the client's ``mimeTypes``)."""
SKILLS = "io.modelcontextprotocol/skills"
"""Agent Skills over MCP (SEP-2640)."""
TASKS = "io.modelcontextprotocol/tasks"
"""Tasks (SEP-2663): a ``tools/call`` answered with a task the client polls (2026-07-28)."""

# `_meta`-key rules: a mandatory prefix of dot-separated labels, a slash, then a name.
_ID = re.compile(r"^[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*/"
                 r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


def check_extensions(declared: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Validate an app's ``extensions=`` (identifier -> settings object); a copy to advertise."""
    out: dict[str, dict[str, Any]] = {}
    for ext_id, settings in (declared or {}).items():
        if not isinstance(ext_id, str) or not _ID.match(ext_id):
            raise ConfigurationError(f"extension identifier {ext_id!r} must be prefixed, like 'com.example/name'")
        if settings is None:
            settings = {}
        if not isinstance(settings, Mapping):
            raise ConfigurationError(f"extension {ext_id!r}: settings must be an object (use {{}} for none)")
        out[ext_id] = dict(settings)
    return out


def client_extensions(caps: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The extensions a client declared: identifier -> settings (non-object entries dropped)."""
    if not caps:
        return {}
    raw = caps.get("extensions")
    if type(raw) is not dict:
        return {}
    return {k: v for k, v in raw.items() if type(k) is str and type(v) is dict}


def client_extension(caps: Mapping[str, Any] | None, ext_id: str) -> dict[str, Any] | None:
    """The settings the client declared for ``ext_id``, or ``None`` when it declared none."""
    if not caps:
        return None
    raw = caps.get("extensions")
    if type(raw) is not dict:
        return None
    value = raw.get(ext_id)
    return value if type(value) is dict else None
