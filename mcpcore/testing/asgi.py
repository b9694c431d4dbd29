"""The in-process streaming transport, now part of :mod:`mcpcore.client` (kept importable here)."""

from ..client.asgi import StreamingASGITransport

__all__ = ["StreamingASGITransport"]
