"""CORS for browser-based MCP clients: off unless ``MCP_CORS_ALLOWED_ORIGINS`` lists origins.

Off, a preflight is answered ``204`` with ``Allow`` and no CORS header, so a browser refuses
the cross-origin call. On, an allowed origin's preflight and responses carry the headers a
browser needs (the request headers MCP uses, and ``Mcp-Session-Id`` / ``WWW-Authenticate``
exposed to the page). A preflight never needs a token: browsers send none on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..asgi_types import Message, Send

__all__ = ["Cors"]

_ALLOW = b"GET, POST, DELETE, OPTIONS"
_EXPOSE = b"mcp-session-id, mcp-protocol-version, www-authenticate, retry-after"
_DEFAULT_HEADERS = (b"authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version, "
                    b"mcp-method, mcp-name")


class Cors:
    """The configured origins (``*`` allows any) and the headers answered to them."""

    def __init__(self, origins: Sequence[str]) -> None:
        self.any = "*" in origins
        self.origins = frozenset(o.rstrip("/").lower().encode("latin-1") for o in origins if o != "*")

    def allows(self, origin: bytes) -> bool:
        return bool(self.origins or self.any) and (self.any or origin.rstrip(b"/").lower() in self.origins)

    async def preflight(self, headers: Mapping[bytes, bytes], send: Send, methods: bytes = _ALLOW) -> None:
        """Answer ``OPTIONS``: the allowed ``methods``, and for an allowed origin the CORS grant."""
        out = [(b"allow", methods), (b"content-length", b"0")]
        origin = headers.get(b"origin")
        if origin is not None and self.allows(origin):
            requested = headers.get(b"access-control-request-headers", b"")
            out += [(b"access-control-allow-origin", origin), (b"vary", b"Origin"),
                    (b"access-control-allow-methods", methods),
                    (b"access-control-allow-headers", requested[:2048] if requested else _DEFAULT_HEADERS),
                    (b"access-control-max-age", b"600")]
        await send({"type": "http.response.start", "status": 204, "headers": out})
        await send({"type": "http.response.body", "body": b""})

    def wrap(self, origin: bytes, send: Send) -> Send:
        """``send`` adding the CORS headers of an allowed ``origin`` to the response (else as is)."""
        if not self.allows(origin):
            return send

        async def cors_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), (b"access-control-allow-origin", origin),
                                                  (b"vary", b"Origin"), (b"access-control-expose-headers", _EXPOSE)]}
            await send(message)

        return cors_send
