"""``McpApp``: definitions in, an ASGI application (or a stdio server) out."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any

from . import _json
from ._version import __version__
from .asgi_types import Message, Receive, Scope, Send
from .auth import PRM_CACHE_CONTROL, create_authenticator, metadata_routes, protected_resource_metadata
from .bus.memory import LocalBus
from .config import SessionMode, Settings
from .context import ContextServices
from .definitions.resources import CacheHint, build_resource
from .logs import LEVELS
from .runtime import Runtime
from .security.sealing import RequestStateSealer
from .server.dispatcher import Dispatcher
from .server.notify import AppNotifier, Notifier
from .server.registry import Registry, decorate_inline
from .server.registry import Registry as _Registry
from .sessions.events import MemoryEventBuffer
from .sessions.memory import MemorySessionStore
from .storage.memory import MemoryStorage
from .storage.service import CursorSigner, StateService
from .transports.http import HttpTransport, deliver_route
from .transports.live import LiveSessions

__all__ = ["McpApp"]

log = logging.getLogger("mcpcore.app")



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
        storage: a ``StorageProvider`` for ``ctx.state`` (default: chosen by ``STORAGE_PROVIDER_TYPE``).
        cache_hints: ``{"tools/list": CacheHint(...), ...}`` for 2026-07-28 cacheable results.
        path: the MCP endpoint (default ``MCP_HTTP_ENDPOINT_PATH``, ``/mcp``). Mounted under a
            prefix, the app also answers at the mount point itself.
        setup: ``async def setup(app)`` run at startup, after stores are ready.
        telemetry: a :class:`~mcpcore.telemetry.Telemetry` (or ``True``) to trace and meter calls
            with OpenTelemetry; default: on when ``OTEL_ENABLED=true``.
        landing: serve the landing page (``GET /``) and server card (``/.well-known/mcp.json``);
            default: on for a standalone app, off when mounted under a prefix.
        expose_stateless_session_id: under ``MCP_SESSION_MODE=stateless``, give each 2025-era
            request a fresh ``ctx.session_id`` (it changes every request) instead of ``None``;
            default ``MCP_EXPOSE_STATELESS_SESSION_ID``.
    """

    def __init__(
        self,
        name: str = "mcpcore-server",
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        website_url: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        instructions: str | None = None,
        tools: Iterable[Any] = (),
        resources: Iterable[Any] = (),
        prompts: Iterable[Any] = (),
        settings: Settings | None = None,
        session_mode: SessionMode | None = None,
        storage: Any = None,
        cache_hints: Mapping[str, CacheHint] | None = None,
        path: str | None = None,
        setup: Callable[[McpApp], Awaitable[None]] | None = None,
        telemetry: Any = None,
        landing: bool | None = None,
        expose_stateless_session_id: bool | None = None,
    ) -> None:
        self.settings = settings if settings is not None else Settings.from_env()
        self.expose_stateless_session_id = self.settings.expose_stateless_session_id \
            if expose_stateless_session_id is None else expose_stateless_session_id
        self.session_mode_decl = session_mode or SessionMode()
        self.server_info: dict[str, Any] = {"name": name, "version": version}
        for key, value in (("title", title), ("description", description), ("websiteUrl", website_url),
                           ("icons", icons)):
            if value:
                self.server_info[key] = value
        self.instructions = instructions
        self.registry = Registry()
        for group in (tools, resources, prompts):
            for obj in group:
                self.registry.add(obj)
        self.path = path or self.settings.endpoint_path
        self._setup = setup
        self._storage_given = storage
        self.live = LiveSessions()
        self.redis: Any = None
        s = self.settings
        if s.session_store == "redis":
            self.redis = _redis_client(s)
            from .bus.redis import RedisBus
            from .sessions.redis import RedisSessionStore
            from .sessions.redis_events import RedisEventBuffer

            self.bus: Any = RedisBus(self.redis)
            self.sessions: Any = RedisSessionStore(self.redis, idle_ms=s.session_idle_ms, max_sessions=s.max_sessions,
                                                     max_per_identity=s.max_sessions_per_identity)
            self.events: Any = RedisEventBuffer(self.redis, max_events=s.resumability_max_events,
                                                ttl_ms=s.resumability_ttl_ms) if s.resumability else None
        else:
            self.bus = LocalBus()
            self.sessions = MemorySessionStore(idle_ms=s.session_idle_ms, max_sessions=s.max_sessions,
                                               max_per_identity=s.max_sessions_per_identity,
                                               is_busy=self.live.is_busy)
            self.events = MemoryEventBuffer(s.resumability_max_events, s.resumability_ttl_ms) \
                if s.resumability else None
        self.sessions.on_evict = self._evicted
        self.notifier = Notifier(self.bus)
        self.notify = AppNotifier(self.notifier)
        self.services = ContextServices(log_floor=LEVELS[s.log_level], notify=self.notifier, auth_mode=s.auth_mode,
                                        scope_checks_disabled=s.auth_disable_scope_checks)
        self.authenticator = create_authenticator(s)
        self.telemetry = self._telemetry(telemetry)
        self.landing = landing
        self.dispatcher = Dispatcher(registry=self.registry, settings=self.settings, server_info=self.server_info,
                                     instructions=instructions, services=self.services, notifier=self.notifier,
                                     cache_hints=dict(cache_hints or {}), sessions=self.sessions,
                                     sealer=RequestStateSealer.from_setting(self.settings.request_state_key))
        self.dispatcher.telemetry = self.telemetry
        self._http: HttpTransport | None = None
        self._legacy_sse: Any = None
        self._started = False
        self._draining = False
        self._start_lock: asyncio.Lock | None = None
        self._exit: contextlib.AsyncExitStack | None = None
        self._mode: str | None = None

    # -- registration ---------------------------------------------------------------------------

    def include(self, *objs: Any) -> McpApp:
        """Register decorated functions, definitions, or every definition found in modules."""
        for obj in objs:
            self.registry.add(obj)
        return self

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
            from .definitions.resources import RESOURCE_ATTR
            setattr(f, RESOURCE_ATTR, build_resource(f, uri, **options))
            self.registry.add(f)
            return f
        return deco

    def _telemetry(self, given: Any) -> Any:
        if given is False or (given is None and not self.settings.otel_enabled):
            return None
        from .telemetry import Telemetry

        if isinstance(given, Telemetry):
            return given
        return Telemetry(sessions_active=self._sessions_active)

    def _sessions_active(self) -> int:
        """For ``mcp.sessions.active``: the sessions in this process's memory store; with Redis,
        the sessions this instance is serving now (an open stream or a request in flight), so
        the instances' values add up without counting the shared store once per instance."""
        if isinstance(self.sessions, MemorySessionStore):
            return len(self.sessions)
        return len(self.live)

    def _evicted(self, session_id: str) -> None:
        # The session was deleted or evicted, here or (as the bus said) on another instance: end
        # the streams this instance holds for it, and drop an in-process event buffer (a shared
        # one was dropped by whoever ended the session, in the same write).
        self.live.release(session_id)
        if isinstance(self.events, MemoryEventBuffer):
            self.events.release_nowait(session_id)

    def remove_tool(self, name: str) -> bool:
        """Unregister a tool; clients are not told (call ``app.notify.tools_changed()``)."""
        return self.registry.remove_tool(name)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def session_mode(self) -> str:
        if self._mode is None:
            self._mode = self.settings.resolve_session_mode(self.session_mode_decl)
        return self._mode

    def _storage(self) -> Any:
        if self._storage_given is not None:
            return self._storage_given
        kind = self.settings.storage_provider
        if kind == "in-memory":
            return MemoryStorage(max_entries=self.settings.storage_max_entries)
        from .storage.factory import create_provider
        return create_provider(self.settings)

    async def startup(self, *, transport: str = "http") -> None:
        """Open stores and start background work (idempotent). Run by the ASGI lifespan."""
        if self._started:
            return
        if transport == "http":
            self.services.session_mode = self.session_mode
        if self.dispatcher.sealer is None and _uses_request_input(self.registry):
            log.warning("MCP_REQUEST_STATE_KEY is unset: request state that definitions hand to ctx.request_input "
                        "travels unsigned, and any client can forge it")
        exit_stack = contextlib.AsyncExitStack()
        await exit_stack.__aenter__()
        try:
            provider = self._storage()
            if self._storage_given is None:
                exit_stack.push_async_callback(provider.close)
            try:
                await provider.ping()
            except Exception as exc:  # keep serving: /readyz reports it and requests get a clear 503
                log.error("ctx.state storage is unreachable at startup: %s", getattr(exc, "message", exc))
            signer = CursorSigner.from_settings(self.settings.storage_cursor_key, self.settings.request_state_key)
            self.services.state = StateService(provider, signer, self.telemetry)
            if self.redis is not None:
                exit_stack.push_async_callback(self.redis.aclose)
            if self.authenticator is not None:
                await self.authenticator.start()
                exit_stack.push_async_callback(self.authenticator.close)
            await self.bus.start()
            exit_stack.push_async_callback(self.bus.close)
            self.bus.subscribe(self._on_route)
            attach = getattr(self.sessions, "attach", None)
            if attach is not None:  # the Redis store caches records, kept coherent over the bus
                exit_stack.callback(attach(self.bus))
            self.dispatcher.closing.reset()
            sweeper = asyncio.get_running_loop().create_task(self._sweep())
            exit_stack.callback(sweeper.cancel)
            if self._setup is not None:
                await self._setup(self)
        except BaseException:
            await exit_stack.aclose()
            raise
        self._exit = exit_stack
        self._started = True
        log.info("mcpcore %s serving %s %s", __version__, self.server_info["name"], self.server_info["version"],
                 extra={"fields": {"tools": len(self.registry.tools), "sessionMode": self._mode}})

    def _on_route(self, event: dict[str, Any]) -> None:
        if event.get("kind") == "route":
            deliver_route(self.live, event)

    async def readiness(self) -> tuple[bool, dict[str, str]]:
        """Whether every store this app needs answers: ``(ready, {part: "ok" | reason})``."""
        checks: dict[str, str] = {}

        async def probe(name: str, fn: Any) -> None:
            try:
                await asyncio.wait_for(fn(), 2)
                checks[name] = "ok"
            except Exception as exc:
                checks[name] = getattr(exc, "message", None) or type(exc).__name__

        if self.services.state is not None:
            await probe("state", self.services.state.provider.ping)
        ping = getattr(self.sessions, "ping", None)
        if ping is not None:
            await probe("sessions", ping)
        connected = getattr(self.bus, "connected", None)
        if connected is not None:
            checks["bus"] = "ok" if connected.is_set() else "not connected"
        if not self._started:
            checks["app"] = "not started"
        return all(v == "ok" for v in checks.values()), checks

    def begin_drain(self) -> None:
        """Stop long-lived streams now (listen streams answer and close, GET streams close) so a
        server shutting down is not held open by them; requests in flight still finish."""
        self.dispatcher.closing.set()

    def end_keep_alive(self) -> None:
        """From now on every response carries ``Connection: close``: once the server has stopped
        listening, clients leave their keep-alive connections after their next answer instead of
        writing a request into a connection the server is about to close."""
        self._draining = True

    async def shutdown(self) -> None:
        """End streams, cancel in-flight work, close what startup opened."""
        if not self._started:
            return
        self._started = False
        self.dispatcher.closing.set()
        self.live.close_all()
        await asyncio.sleep(0)
        if self._exit is not None:
            await self._exit.aclose()
            self._exit = None

    async def _sweep(self) -> None:
        period = max(1.0, min(60.0, self.settings.session_idle_ms / 3000))
        keep_alive = getattr(self.sessions, "keep_alive", None)
        while True:
            await asyncio.sleep(period)
            try:
                await self.sessions.sweep()
                if keep_alive is not None:
                    for sid in await keep_alive(self.live.busy_ids()):
                        self._evicted(sid)
            except Exception:
                log.warning("session sweep failed", exc_info=True)

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Any = None) -> AsyncIterator[None]:
        """For a host app: ``Starlette(lifespan=mcp.lifespan)`` / ``FastAPI(lifespan=mcp.lifespan)``."""
        await self.startup()
        try:
            yield
        finally:
            await self.shutdown()

    async def _ensure_started(self) -> None:
        if self._started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if not self._started:
                log.warning("mcpcore started on the first request: the host did not run its lifespan, so it will "
                            "not shut down cleanly (pass lifespan=mcp.lifespan to the host app)")
                await self.startup()

    # -- ASGI -----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            if self._draining:
                send = _closing(send)
            if not self._started:
                await self._ensure_started()
            http = self._http
            if http is None:
                http = self._http = HttpTransport(self._runtime())
            path = scope["path"]
            root = scope.get("root_path", "")
            if root and path.startswith(root):
                path = path[len(root):]
            if path == self.path or (root and path in ("", "/")):
                await http(scope, receive, send)
            elif self.settings.legacy_sse and path in ("/sse", "/messages"):
                if self._legacy_sse is None:
                    from .transports.legacy_sse import LegacySseTransport
                    self._legacy_sse = LegacySseTransport(self._runtime())
                await self._legacy_sse(scope, receive, send, path)
            elif path == "/healthz" and scope["method"] == "GET":
                await _plain_json(send, 200, {"status": "ok"})
            elif self.authenticator is not None and path in metadata_routes(self.settings, self.path):
                await self._protected_resource_metadata(scope, send)
            elif path in ("/", "/.well-known/mcp.json") and scope["method"] == "GET" and (
                    self.landing if self.landing is not None else not root):
                await self._describe(scope, send, path)
            elif path == "/readyz" and scope["method"] == "GET":
                ready, checks = await self.readiness()
                await _plain_json(send, 200 if ready else 503, {"status": "ready" if ready else "unavailable",
                                                                "checks": checks})
            else:
                await _plain_json(send, 404, {"error": "not found"})
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})

    async def _describe(self, scope: Scope, send: Send, path: str) -> None:
        from .landing import landing_page, server_card

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        base = f"{scope.get('scheme', 'http')}://{headers.get('host', 'localhost')}{scope.get('root_path', '')}"
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
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "localhost")
        base = f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}"
        defs: list[Any] = [*self.registry.tools.values(), *self.registry.resources.values(), *self.registry.templates]
        scopes = sorted({s for d in defs for s in d.auth})
        doc = protected_resource_metadata(self.settings, base, scopes, endpoint_path=self.path)
        body = _json.dumps(doc)
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"cache-control", PRM_CACHE_CONTROL.encode())]})
        await send({"type": "http.response.body", "body": body})

    def _runtime(self) -> Runtime:
        return Runtime(settings=self.settings, dispatcher=self.dispatcher, services=self.services,
                       notifier=self.notifier, bus=self.bus, sessions=self.sessions, live=self.live,
                       session_mode=self.session_mode, server_info=self.server_info, events=self.events,
                       shared=self.redis is not None, auth=self.authenticator,
                       expose_stateless_session_id=self.expose_stateless_session_id)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:
                    log.error("startup failed: %s", exc)
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- running --------------------------------------------------------------------------------

    async def serve_stdio(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve MCP over stdin/stdout until EOF (logs go to stderr)."""
        from .transports.stdio import StdioTransport

        await self.startup(transport="stdio")
        try:
            await StdioTransport(self._stdio_runtime()).serve(stdin, stdout)
        finally:
            await self.shutdown()

    def _stdio_runtime(self) -> Runtime:
        return Runtime(settings=self.settings, dispatcher=self.dispatcher, services=self.services,
                       notifier=self.notifier, bus=self.bus, sessions=self.sessions, live=self.live,
                       session_mode="stateful", server_info=self.server_info)

    def run(self, transport: str | None = None, *, host: str | None = None, port: int | None = None) -> None:
        """Serve until interrupted: HTTP with uvicorn, or stdio."""
        from .cli import serve

        serve(self, transport or self.settings.transport, host=host or self.settings.http_host,
              port=port if port is not None else self.settings.http_port)


def _closing(send: Send) -> Send:
    async def closing_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
        await send(message)
    return closing_send


async def _plain_json(send: Send, status: int, obj: Any) -> None:
    body = _json.dumps(obj)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _uses_request_input(registry: _Registry) -> bool:
    """Whether any definition's function refers to ``request_input`` (a cheap static check)."""
    defs: list[Any] = [*registry.tools.values(), *registry.prompts.values(), *registry.resources.values(),
                       *registry.templates]
    fns = [d.fn for d in defs]
    for fn in fns:
        code = getattr(fn, "__code__", None)
        if code is not None and "request_input" in _code_names(code):
            return True
    return False


def _redis_client(settings: Settings) -> Any:
    """The app's Redis client for ``MCP_REDIS_MODE`` (lazily connecting; the app owns and closes it)."""
    from .redis_client import create_redis_client

    return create_redis_client(settings)
