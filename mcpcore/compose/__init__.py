"""Composition: serve other MCP servers' definitions behind a namespace.

``app.mount(child, namespace="billing")`` links a child :class:`~mcpcore.McpApp` in process (see
:mod:`.mount`); ``app.mount(proxy("https://host/mcp"), namespace="crm")`` serves a remote server's
(see :mod:`.proxied`). See docs/composition.md.
"""

from .mount import Composition, Mount, mount
from .names import Namespace
from .proxied import Proxy, proxy

__all__ = ["Composition", "Mount", "Namespace", "Proxy", "mount", "proxy"]
