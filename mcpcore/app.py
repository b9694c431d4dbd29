"""``McpApp``: definitions in, an ASGI application (or a stdio server) out."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._version import __version__
from .asgi_types import Receive, Scope, Send
from .auth.base import Authenticator
from .auth.host import HostIdentity
from .auth.verifier import TokenVerifier
from .config import SessionMode, Settings
from .context import ContextServices
from .definitions.depends import DependencyOverrides
from .definitions.resources import CacheHint, resource
from .extensions import as_skills
from .extensions.seam import Extension, Seam
from .layer import LayerInfo
from .logs import LEVELS, ensure_logging
from .middleware.base import Middleware
from .observability import AppMetrics, app_telemetry
from .protocol.extensions import check_extensions
from .runtime import Runtime
from .security.sealing import RequestStateSealer
from .server.dispatcher import Dispatcher
from .server.notify import AppNotifier, Notifier
from .server.registry import Registry, decorate_inline
from .serving import apply_http_limits, check_shared_store, connection_close, lifespan_protocol, serve
from .sessions.base import SessionStore
from .side_routes import SideRoutes
from .stack import AppState, Stack, authenticator_for, delegation_for, open_delegation, open_layers, setup_context
from .storage.base import StorageProvider
from .tasks import Tasks
from .transports.http import HttpTransport
from .transports.http_sse import HttpSseTransport
from .transports.live import LiveSessions
from .wiring import Readiness, Stores, uses_request_input

__all__ = ["McpApp"]

if TYPE_CHECKING:
    from .auth.delegation import Delegation
    from .compose.mount import Composition

log = logging.getLogger("mcpcore.app")
E = TypeVar("E", bound=Extension)


class McpApp:
    """An MCP server as an ASGI application, serving both protocol eras on one endpoint.

    Example::

        app = McpApp("notes", "1.0.0", tools=[search], resources=[note])
        # uvicorn server:app   |   mcpcore run server:app --transport stdio

    Args:
        name, version: the server's identity (``serverInfo``).
        title, description, website_url, icons: optional identity fields.
        instructions: guidance sent to clients (``initialize`` / ``server/discover``).
        tools, resources, prompts: decorated functions, definitions or modules.
        settings: explicit :class:`Settings` (default: read from the environment).
        session_mode: the code's default 2025-era session mode and an optional requirement;
            ``MCP_SESSION_MODE`` wins over the default, never over the requirement.
        storage: a ``StorageProvider`` for ``ctx.state`` (default: the store kind ``STORAGE_PROVIDER_TYPE`` names).
        session_store: a ``SessionStore`` for 2025-era sessions (default: the kind ``MCP_SESSION_STORE`` names).
        cache_hints: ``{"tools/list": CacheHint(...), ...}`` for 2026-07-28 cacheable results.
        path: the MCP endpoint (default ``MCP_HTTP_ENDPOINT_PATH``, ``/mcp``). Mounted under a prefix, the app
            also answers at the mount point itself.
        setup: ``async def setup(app)`` run at startup, after stores are ready (an async generator: to its
            ``yield``, the rest at shutdown); what it opens for the app's life goes on ``app.state``.
        middleware: layers around every method (:class:`~mcpcore.Middleware`), the first
            outermost, inside the framework's own (see ``app.layers``).
        auth: your own :class:`~mcpcore.auth.TokenVerifier` (or a whole ``Authenticator``, such as an
            ``OAuthProxy``) in place of ``MCP_AUTH_MODE``'s, or a :class:`~mcpcore.auth.HostIdentity`.
        telemetry: a :class:`~mcpcore.telemetry.Telemetry` (or ``True``) to trace and meter calls with
            OpenTelemetry; default: on when ``OTEL_ENABLED=true``.
        landing: serve the landing page (``GET /``) and server card (``/.well-known/mcp.json``); default: on
            for a standalone app, off when mounted under a prefix.
        expose_stateless_session_id: under ``MCP_SESSION_MODE=stateless``, give each 2025-era request a fresh
            ``ctx.session_id`` (it changes every request), not ``None``; default ``MCP_EXPOSE_STATELESS_SESSION_ID``.
        extensions: ``{identifier: settings}`` declared under ``capabilities.extensions`` in both eras (``{}``
            for no settings); MCP Apps and Skills declare theirs themselves.
        skills: a folder of Agent Skills to serve (a path or a :class:`~mcpcore.extensions.skills.Skills`), SEP-2640.
        delegation: tokens for downstream APIs on the caller's behalf (:class:`~mcpcore.auth.delegation.Delegation`);
            default: RFC 8693 token exchange when ``MCP_TOKEN_EXCHANGE_URL`` is set.
        mounts: ``{namespace: child}`` served as :meth:`mount` would.
    """

    def __init__(
        self,
        name: str = "mcpcore-server",
        version: str = "0.1.0",
        *,
        title: str | None = None, description: str | None = None,
        website_url: str | None = None, icons: list[dict[str, Any]] | None = None,
        instructions: str | None = None,
        tools: Iterable[Any] = (), resources: Iterable[Any] = (), prompts: Iterable[Any] = (),
        settings: Settings | None = None,
        session_mode: SessionMode | None = None,
        storage: StorageProvider | None = None, session_store: SessionStore | None = None,
        cache_hints: Mapping[str, CacheHint] | None = None,
        path: str | None = None,
        setup: Callable[[McpApp], Any] | None = None,
        middleware: Sequence[Middleware] = (),
        auth: TokenVerifier | Authenticator | HostIdentity | None = None,
        telemetry: Any = None,
        landing: bool | None = None,
        expose_stateless_session_id: bool | None = None,
        extensions: Mapping[str, Mapping[str, Any]] | None = None,
        skills: Any = None, delegation: Delegation | None = None, mounts: Mapping[str, Any] | None = None,
    ) -> None:
        self.settings = settings if settings is not None else Settings.from_env()
        self.expose_stateless_session_id = self.settings.expose_stateless_session_id \
            if expose_stateless_session_id is None else expose_stateless_session_id
        self.session_mode_decl = session_mode or SessionMode()
        self.server_info: dict[str, Any] = {"name": name, "version": version, **{k: v for k, v in (
            ("title", title), ("description", description), ("websiteUrl", website_url), ("icons", icons)) if v}}
        self.instructions = instructions
        self.registry = Registry()
        for obj in (*tools, *resources, *prompts):
            self.registry.add(obj)
        self.path = path or self.settings.endpoint_path
        self.live = LiveSessions()
        s = self.settings
        self.authenticator = authenticator_for(s, auth)
        if self.authenticator is not None and self.authenticator.mode != s.auth_mode:
            s = self.settings = s.replace(auth_mode=self.authenticator.mode)  # final: every part gets this one
        self.stores = Stores(s, self.live, session_store=session_store, state_given=storage is not None)
        self.redis = self.stores.redis
        self.bus = self.stores.bus
        self.sessions = self.stores.sessions
        self.events = self.stores.events
        self.stream_slots = self.stores.stream_slots
        self.notifier = Notifier(self.bus)
        self.notify = AppNotifier(self.notifier)
        self.state = AppState()
        """What ``setup`` opened for the app's lifetime (``ctx.app_state`` in handlers and dependencies)."""
        self.delegation = delegation_for(s, delegation)
        self.services = ContextServices(log_floor=LEVELS[s.log_level], notify=self.notifier, auth_mode=s.auth_mode,
                                        scope_checks_disabled=s.auth_disable_scope_checks, app_state=self.state,
                                        delegation=self.delegation)
        self.telemetry = app_telemetry(telemetry, self.settings, self.stores)
        self.landing = landing
        self.dispatcher = Dispatcher(registry=self.registry, settings=self.settings, server_info=self.server_info,
                                     instructions=instructions, services=self.services, notifier=self.notifier,
                                     cache_hints=dict(cache_hints or {}), sessions=self.sessions,
                                     sealer=RequestStateSealer.from_setting(self.settings.request_state_key),
                                     extensions=check_extensions(extensions), telemetry=self.telemetry)
        self._draining = False
        self.readiness = Readiness(self.stores, self.services)
        """``await app.readiness()``: ``(ready, {part: "ok" | reason})``, what ``/readyz`` answers."""
        self.stack = Stack(s, self.authenticator, self.services, storage, self.events, middleware,
                           self.stores.state_kind, self.telemetry)
        """The app's layers (:mod:`mcpcore.stack`); ``app.layers`` lists them."""
        self.middleware: list[Middleware] = self.stack.middleware
        self.dispatcher.use(self.middleware)
        self.seam = Seam(self.dispatcher, self.services, self.readiness, self.notifier, middleware=self.middleware,
                         probes=self.stores.probes, redis=self.redis,
                         own_state=None if storage is None else self.stack.state,
                         setup=None if setup is None else lambda: setup_context(setup, self))
        """What extensions plug into (:meth:`plug`) and what a parent mounting this app sees of it."""
        self.skills: Any = None if skills is None else self.plug(as_skills(skills))
        self.tasks = self.plug(Tasks(self.stores.tasks)).service
        self.metrics = AppMetrics(s, self.telemetry, self.dispatcher, self.notifier, self.stores, self.tasks) \
            if s.metrics_enabled else None
        """Prometheus metrics (``MCP_METRICS_ENABLED``), served at ``MCP_METRICS_PATH``; ``None``: off."""
        self._side = self.plug(SideRoutes(self.path, self.authenticator, landing, self.metrics))
        # what the transports serve with, built once: HTTP and HTTP+SSE take this one, stdio Runtime.stdio();
        # startup() for HTTP sets the resolved session mode (resolving fails at serve, not here)
        self._runtime = Runtime(dispatcher=self.dispatcher, services=self.services, bus=self.bus,
                                sessions=self.sessions, live=self.live, session_mode="stateful",
                                shared=self.stores.shared, auth=self.authenticator, stream_slots=self.stream_slots,
                                expose_stateless_session_id=self.expose_stateless_session_id)
        self._http: HttpTransport | None = None
        self._http_sse: HttpSseTransport | None = None
        self._start_lock: asyncio.Lock | None = None
        self._exit: contextlib.AsyncExitStack | None = None
        self._mode: str | None = None
        self._server_checked = False  # the lifespan put the HTTP ceilings on the server (or said it cannot)
        self.composition: Composition | None = None
        """What this app mounts (:meth:`mount`), once it mounts something."""
        for namespace, child in (mounts or {}).items():
            self.mount(child, namespace)

    # -- registration ---------------------------------------------------------------------------

    def include(self, *objs: Any) -> McpApp:
        """Register decorated functions, definitions, or every definition found in modules."""
        for obj in objs:
            self.registry.add(obj)
        return self

    def include_fastapi(self, api: Any, *, routes: Any = None, **options: Any) -> Any:
        """A FastAPI app's routes as tools called in process (:func:`mcpcore.openapi.fastapi_tools`)."""
        from .openapi import fastapi_tools
        self.include(*(built := fastapi_tools(api, routes=routes, **options)))
        return built

    def tool(self, fn: Any = None, /, **options: Any) -> Any:
        """``@app.tool`` / ``@app.tool(...)``: define and register a tool."""
        def deco(f: Any) -> Any:
            self.registry.add(decorate_inline(f, "tool", **options))
            return f
        return deco(fn) if fn is not None else deco

    def prompt(self, fn: Any = None, /, **options: Any) -> Any:
        """``@app.prompt`` / ``@app.prompt(...)``: define and register a prompt."""
        def deco(f: Any) -> Any:
            self.registry.add(decorate_inline(f, "prompt", **options))
            return f
        return deco(fn) if fn is not None else deco

    def resource(self, uri: str, **options: Any) -> Callable[[Any], Any]:
        """``@app.resource(uri, ...)``: define and register a resource or template."""
        def deco(f: Any) -> Any:
            self.registry.add(resource(uri, **options)(f))
            return f
        return deco

    def mount(self, child: Any, namespace: str, *, separator: str | None = None) -> McpApp:
        """Serve ``child``'s definitions under ``namespace``, a live link (:func:`mcpcore.compose.mount`)."""
        from .compose.mount import Composition
        comp = self.composition = self.composition or Composition(self.seam)
        comp.mount(child.seam if isinstance(child, McpApp) else child, namespace, separator=separator)
        return self

    def plug(self, extension: E) -> E:
        """Serve ``extension`` (tasks, skills, your own) through :attr:`seam`, before the app starts."""
        if self.readiness.started:
            raise RuntimeError("plug extensions in before the app starts")
        extension.plug_into(self.seam)
        return extension

    def add_middleware(self, layer: Middleware) -> McpApp:
        """Add a layer inside those already there (before the app starts)."""
        self.seam.add_middleware(layer)
        return self

    @property
    def layers(self) -> list[LayerInfo]:
        """The layers a request passes, outermost first: the framework's, then the middleware."""
        return self.stack.describe()

    @property
    def dependency_overrides(self) -> DependencyOverrides:
        """``{dependency: replacement}`` applied to every definition (tests swap a database)."""
        return self.dispatcher.core.dependency_overrides

    def remove_tool(self, name: str) -> bool:
        """Unregister a tool; clients are not told (call ``app.notify.tools_changed()``)."""
        return self.registry.remove_tool(name)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether the app has started (:meth:`startup`) and not shut down since."""
        return self.readiness.started

    @property
    def session_mode(self) -> str:
        if self._mode is None:
            self._mode = self.settings.resolve_session_mode(self.session_mode_decl)
        return self._mode

    async def startup(self, *, transport: str = "http") -> None:
        """Open stores and start background work (idempotent). Run by the ASGI lifespan."""
        if self.readiness.started:
            return
        ensure_logging(self.settings.log_level)  # plain uvicorn: JSON lines unless logging is set up
        if transport == "http":
            self.services.session_mode = self._runtime.session_mode = self.session_mode
            check_shared_store(self.settings)
        if self.dispatcher.sealer is None and uses_request_input(self.registry):
            log.warning("MCP_REQUEST_STATE_KEY is unset: request state that definitions hand to ctx.request_input "
                        "travels unsigned, and any client can forge it")
        exit_stack = contextlib.AsyncExitStack()
        await exit_stack.__aenter__()
        try:
            await open_layers(exit_stack, self.stack.framework, self.settings, self.redis)
            await open_delegation(exit_stack, self.delegation, self.redis)
            await self.stores.open(exit_stack, self.seam.starts, self.settings)
            if self.metrics is not None:
                await self.metrics.open(exit_stack)
            self.dispatcher.closing.reset()
            sweeper = asyncio.get_running_loop().create_task(self.stores.sweep_forever())
            exit_stack.callback(sweeper.cancel)
            await open_layers(exit_stack, self.stack.middleware, self.settings, self.redis)
            if self.seam.setup is not None:
                await exit_stack.enter_async_context(self.seam.setup())
        except BaseException:
            await exit_stack.aclose()
            raise
        self._exit = exit_stack
        self.readiness.started = True
        log.info("mcpcore %s serving %s %s", __version__, self.server_info["name"], self.server_info["version"],
                 extra={"fields": {"tools": len(self.registry.tools), "sessionMode": self._mode}})

    def begin_drain(self) -> None:
        """End long-lived streams now (listen streams answer, GET streams close); requests in flight finish."""
        self.dispatcher.closing.set()

    def end_keep_alive(self) -> None:
        """From now on every response carries ``Connection: close``: once the server has stopped listening,
        clients leave their keep-alive connections after their next answer instead of writing a request into
        a connection the server is about to close."""
        self._draining = True

    async def shutdown(self) -> None:
        """End streams, cancel in-flight work, close what startup opened."""
        if not self.readiness.started:
            return
        self.readiness.started = False
        self.dispatcher.closing.set()
        self.live.close_all()
        await asyncio.sleep(0)
        if self._exit is not None:
            await self._exit.aclose()
            self._exit = None

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Any = None) -> AsyncIterator[None]:
        """For a host app: ``Starlette(lifespan=mcp.lifespan)`` / ``FastAPI(lifespan=mcp.lifespan)``."""
        await self.startup()
        try:
            yield
        finally:
            await self.shutdown()

    async def _ensure_started(self) -> None:
        if self.readiness.started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if not self.readiness.started:
                log.warning("mcpcore started on the first request: the host did not run its lifespan, so it will "
                            "not shut down cleanly (pass lifespan=mcp.lifespan to the host app)")
                await self.startup()

    # -- ASGI -----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            if self._draining:
                send = connection_close(send)
            if not self.readiness.started:
                await self._ensure_started()
            http = self._http
            if http is None:  # the first request: the lifespan may not have run (--lifespan off, a host app)
                if not self._server_checked:
                    apply_http_limits(receive, at_startup=False)
                http = self._http = HttpTransport(self._runtime, self.stack)
            path = scope["path"]
            root = scope.get("root_path", "")
            if root and path.startswith(root):
                path = path[len(root):]
            if path == self.path or (root and path in ("", "/")):
                await http.serve(scope, receive, send)
            elif self.settings.http_sse and path in ("/sse", "/messages"):
                if self._http_sse is None:
                    self._http_sse = HttpSseTransport(self._runtime, self.stack)
                await self._http_sse(scope, receive, send, path)
            else:
                await self._side(scope, send, path, root, receive)
        elif kind == "lifespan":
            self._server_checked = True
            await lifespan_protocol(self, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})

    def side_routes(self, *, mounted: bool = False) -> dict[str, str]:
        """The paths served beside the MCP transports (GET, HEAD), each with why it is public
        (:class:`~mcpcore.side_routes.SideRoutes`); ``mounted``: as served under a prefix."""
        return self._side.routes(mounted=mounted)

    # -- running --------------------------------------------------------------------------------

    async def serve_stdio(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve MCP over stdin/stdout until EOF (logs go to stderr)."""
        from .transports.stdio import StdioTransport

        await self.startup(transport="stdio")
        try:
            await StdioTransport(self._runtime.stdio()).serve(stdin, stdout)
        finally:
            await self.shutdown()

    def run(self, transport: str | None = None, *, host: str | None = None, port: int | None = None) -> None:
        """Serve until interrupted: HTTP with uvicorn, or stdio."""
        serve(self, transport or self.settings.transport, host=host or self.settings.http_host,
              port=port if port is not None else self.settings.http_port)
