"""Protocol extensions mcpcore serves: declaring them, MCP Apps and Agent Skills.

- :func:`check_extensions` / ``McpApp(extensions={...})``: declare any extension.
- ``ctx.client_extension(id)``: what the caller declared for an extension, or ``None``.
- :class:`~mcpcore.extensions.apps.App`: an HTML view for a tool (``@tool(app=App(...))``).
- :class:`~mcpcore.extensions.skills.Skills`: a folder of Agent Skills (``McpApp(skills=...)``).
"""

from __future__ import annotations

from .negotiation import APP_MIME_TYPE, APPS, SKILLS, check_extensions, client_extension, client_extensions

__all__ = ["APPS", "APP_MIME_TYPE", "SKILLS", "check_extensions", "client_extension", "client_extensions"]
