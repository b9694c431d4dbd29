"""Composition: serve other MCP servers' definitions behind a namespace.

``app.mount(child, namespace="billing")`` links a child :class:`~mcpcore.McpApp` in process (see
:mod:`.mount`). See docs/composition.md.
"""

from .mount import Composition, Mount, mount
from .names import Namespace

__all__ = ["Composition", "Mount", "Namespace", "mount"]
