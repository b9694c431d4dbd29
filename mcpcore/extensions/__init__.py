"""Protocol extensions mcpcore serves: declaring them, MCP Apps and Agent Skills.

- :func:`check_extensions` / ``McpApp(extensions={...})``: declare any extension.
- ``ctx.client_extension(id)``: what the caller declared for an extension, or ``None``.
- :class:`~mcpcore.extensions.apps.App`: an HTML view for a tool (``@tool(app=App(...))``).
- :class:`~mcpcore.extensions.skills.Skills`: a folder of Agent Skills (``McpApp(skills=...)``).
- :class:`Extension` / ``app.plug(extension)``: your own, plugged in through the :class:`Seam`
  (methods, definitions, its declaration, a listen topic, startup and shutdown), as tasks and
  skills are.
"""

from __future__ import annotations

from typing import Any

from ..protocol.extensions import APP_MIME_TYPE, APPS, SKILLS, check_extensions, client_extension, client_extensions
from .seam import Extension, Seam

__all__ = ["APPS", "APP_MIME_TYPE", "SKILLS", "App", "Csp", "Extension", "Seam", "Skills", "check_extensions",
           "client_extension", "client_extensions", "supports_apps"]

_LAZY = {"App": "apps", "Csp": "apps", "supports_apps": "apps", "Skills": "skills"}


def as_skills(given: Any) -> Any:
    """``given`` (a folder, or a :class:`Skills`) as a :class:`Skills`; the YAML parser is
    imported only now (``McpApp(skills=...)``)."""
    from .skills import Skills

    return given if isinstance(given, Skills) else Skills(given)


def __getattr__(name: str) -> Any:
    # Loaded on first use: `import mcpcore` stays free of the YAML parser and the Apps helpers.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpcore.extensions' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
