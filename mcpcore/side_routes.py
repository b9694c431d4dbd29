"""The routes an app serves beside its MCP transports: probes, the protected-resource metadata,
the landing page, the server card and (when enabled) the Prometheus metrics. Each is public by
design (none reads a token), answers GET and HEAD, and passes the same Host/Origin guard as ``/mcp``.
The metadata documents and the authorization server's token, registration, revocation and key
endpoints grant CORS to the origins of ``MCP_CORS_ALLOWED_ORIGINS`` (browser-based clients), as
``/mcp`` does; their preflights are answered."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from . import _json
from .asgi_types import Message, Receive, Scope, Send
from .auth import PRM_CACHE_CONTROL, metadata_routes, protected_resource_metadata
from .transports.cors import Cors
from .transports.guard import OriginGuard, valid_host

if TYPE_CHECKING:
    from .auth.base import Authenticator
    from .config import Settings
    from .extensions.seam import Seam
    from .observability import AppMetrics
    from .server.core import ServerCore
    from .server.registry import Registry

__all__ = ["SideRoutes", "plain_json"]


log = logging.getLogger("mcpcore.app")


class SideRoutes:
    """Serves an app's side routes (see :meth:`routes`); an extension
    (:class:`~mcpcore.extensions.seam.Extension`): the app plugs it in, and it takes the settings,
    the server core and the readiness check from the seam. ``path``: the MCP endpoint's;
    ``authenticator``: the app's door (``None``: no auth); ``landing``: serve the landing page and
    the server card (``None``: unless mounted); ``metrics``: the Prometheus metrics, if enabled.
    It is also what the landing page and the server card describe (:class:`~mcpcore.landing.Described`)."""

    settings: Settings
    core: ServerCore
    readiness: Callable[[], Awaitable[tuple[bool, dict[str, str]]]]

    def __init__(self, path: str, authenticator: Authenticator | None, landing: bool | None,
                 metrics: AppMetrics | None) -> None:
        self.path = path
        self.authenticator = authenticator
        self.landing = landing
        self.metrics = metrics
        self.proxy: Any = _proxy_of(authenticator)

    def plug_into(self, seam: Seam) -> None:
        """Take what the routes read from ``seam`` (runs once, while the app is built)."""
        self.settings = s = seam.settings
        self.core = seam.core
        self.readiness = seam.readiness
        self.guard = OriginGuard((*s.allowed_origins, *s.cors_allowed_origins), s.allowed_hosts)
        self.cors = Cors(s.cors_allowed_origins)

    @property
    def registry(self) -> Registry:
        """The app's definitions."""
        return self.core.registry

    @property
    def server_info(self) -> dict[str, Any]:
        """The app's identity (``serverInfo``)."""
        return self.core.server_info

    @property
    def instructions(self) -> str | None:
        """The app's guidance to clients."""
        return self.core.instructions

    def routes(self, *, mounted: bool = False) -> dict[str, str]:
        """The paths served, each with why it is public: none of them reads a token, so none
        reveals more than an unauthenticated caller may know. ``mounted``: as served under a
        host app's prefix."""
        routes = {"/healthz": "liveness probe", "/readyz": "readiness probe (part names and states only)"}
        if self.authenticator is not None:
            for path in metadata_routes(self.settings, self.path):
                routes[path] = "RFC 9728 protected-resource metadata (clients read it before they have a token)"
        for path in sorted(self.proxy.paths if self.proxy is not None else ()):
            routes[path] = "the OAuth authorization server (MCP_AUTH_MODE=proxy: metadata, sign-in, tokens)"
        if self.metrics is not None:
            routes[self.metrics.path] = "Prometheus metrics (MCP_METRICS_ENABLED; counts and names, no payloads)"
        if self.landing if self.landing is not None else not mounted:
            routes["/"] = "landing page (with auth on: no definitions listed)"
            routes["/.well-known/mcp.json"] = "server card (with auth on: no definitions listed)"
        return routes

    def cors_methods(self, path: str) -> bytes | None:
        """The methods a browser page on an allowed origin may use on ``path`` (see the module
        docstring), or ``None`` where no CORS is granted."""
        if self.proxy is not None and path in self.proxy.paths:
            methods: bytes | None = self.proxy.cors_methods(path)
            return methods
        if self.authenticator is not None and path in metadata_routes(self.settings, self.path):
            return b"GET, HEAD, OPTIONS"
        return None

    async def __call__(self, scope: Scope, send: Send, path: str, root: str, receive: Receive | None = None) -> None:
        method = scope["method"]
        methods = self.cors_methods(path)
        if methods is not None:
            if method == "OPTIONS":
                reason = self.guard.check(scope, _header(scope, b"host"), None)
                if reason is not None:
                    await plain_json(send, 403, {"error": f"forbidden: {reason}"})
                    return
                await self.cors.preflight(dict(scope["headers"]), send, methods)
                return
            origin = _header(scope, b"origin")
            if origin is not None:
                send = self.cors.wrap(origin, send)
        if self.proxy is not None and receive is not None and path in self.proxy.paths:
            reason = self.guard.check(scope, _header(scope, b"host"), None)
            if reason is not None:
                await plain_json(send, 403, {"error": f"forbidden: {reason}"})
                return
            info = self.server_info
            await self.proxy.serve(scope, receive, send, path, self._scopes(), info.get("title") or info["name"])
            return
        if path not in self.routes(mounted=bool(root)):
            await plain_json(send, 404, {"error": "not found"})
            return
        if method not in ("GET", "HEAD"):
            await plain_json(send, 405, {"error": "method not allowed"}, [(b"allow", b"GET, HEAD")])
            return
        host = origin = None
        for k, v in scope["headers"]:
            if k == b"host":
                host = v
            elif k == b"origin":
                origin = v
        reason = self.guard.check(scope, host, origin)
        if reason is not None:
            log.warning("refused request: %s", reason)
            await plain_json(send, 403, {"error": f"forbidden: {reason}"})
            return
        if method == "HEAD":
            send = _headers_only(send)
        if path == "/healthz":
            await plain_json(send, 200, {"status": "ok"})
        elif path == "/readyz":
            ready, checks = await self.readiness()
            await plain_json(send, 200 if ready else 503, {"status": "ready" if ready else "unavailable",
                                                           "checks": checks})
        elif path in ("/", "/.well-known/mcp.json"):
            await self._describe(scope, send, path)
        elif self.metrics is not None and path == self.metrics.path:
            await self.metrics.answer(send)
        else:
            await self._protected_resource_metadata(scope, send)

    async def _describe(self, scope: Scope, send: Send, path: str) -> None:
        from .landing import landing_page, server_card

        base = _base(scope)
        if path == "/":
            body = landing_page(self, base).encode()
            h = [(b"content-type", b"text/html; charset=utf-8"),
                 (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'"),
                 (b"x-content-type-options", b"nosniff")]
        else:
            body = _json.dumps(server_card(self, base))
            h = [(b"content-type", b"application/json"), (b"cache-control", b"public, max-age=300")]
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*h, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def _protected_resource_metadata(self, scope: Scope, send: Send) -> None:
        doc = protected_resource_metadata(self.settings, _base(scope), self._scopes(), endpoint_path=self.path)
        if self.proxy is not None:  # this app is its own authorization server
            doc["resource"] = self.proxy.resource
            doc["authorization_servers"] = [self.proxy.issuer]
        body = _json.dumps(doc)
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"cache-control", PRM_CACHE_CONTROL.encode())]})
        await send({"type": "http.response.body", "body": body})


    def _scopes(self) -> list[str]:
        r = self.registry
        defs: list[Any] = [*r.tools.values(), *r.resources.values(), *r.templates]
        return sorted({s for d in defs for s in d.auth})


def _proxy_of(authenticator: Any) -> Any:
    """The authorization server (``MCP_AUTH_MODE=proxy``) the app's authenticator is or wraps;
    found by its mode so an app without one never imports it."""
    for _ in range(4):
        if authenticator is None or (getattr(authenticator, "mode", None) == "proxy"
                                     and hasattr(authenticator, "serve")):
            return authenticator
        authenticator = getattr(authenticator, "tokens", None)
    return None


def _header(scope: Scope, name: bytes) -> bytes | None:
    for k, v in scope["headers"]:
        if k == name:
            return bytes(v)
    return None


async def plain_json(send: Send, status: int, obj: Any, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON response that is not JSON-RPC (probes, 404s)."""
    body = _json.dumps(obj)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(extra or ())]})
    await send({"type": "http.response.body", "body": body})


def _headers_only(send: Send) -> Send:
    """``send`` for a HEAD request: the GET's status and headers, no body."""
    async def head_send(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {"type": "http.response.body", "body": b""}
        await send(message)
    return head_send


def _base(scope: Scope) -> str:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    return f"{scope.get('scheme', 'http')}://{_host(scope, headers)}{scope.get('root_path', '')}"


def _host(scope: Scope, headers: Mapping[str, str]) -> str:
    """The Host to build absolute URLs from: the header when well-formed (the guard already
    refused a disallowed one), else the address the server is bound to."""
    host = headers.get("host")
    if host is not None and valid_host(host):
        return host
    server = scope.get("server")
    return f"{server[0]}:{server[1]}" if server else "localhost"
