"""Serving an app: HTTP under uvicorn (uvloop, httptools) with a draining shutdown, or stdio.

Used by ``mcpcore run`` and ``McpApp.run()``. It knows an MCP app only by what it can do
(:class:`Servable`), so it sits below ``app`` in the layers: ``app`` imports it, never the
reverse.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .asgi_types import Message, Receive, Send
from .config import Settings
from .errors import ConfigurationError
from .logs import configure_logging, logging_config
from .store_kinds import store_kind

__all__ = ["DRAIN_SECONDS", "NAMED_PROTOCOL", "QUIESCE_SECONDS", "Servable", "apply_http_limits",
           "check_shared_store", "connection_close", "endpoint_url", "lifespan_protocol", "serve", "serving_line",
           "settings_of", "warn_unknown_variables"]

log = logging.getLogger("mcpcore.cli")

DRAIN_SECONDS = 5
"""After SIGTERM, how long requests in flight have to finish before uvicorn closes them."""
QUIESCE_SECONDS = 1.5
"""Before that, how long a draining server waits for busy keep-alive clients to leave."""


@runtime_checkable
class Servable(Protocol):
    """What serving needs of an MCP app (an :class:`~mcpcore.McpApp`)."""

    settings: Settings
    path: str

    @property
    def session_mode(self) -> str: ...

    async def serve_stdio(self, stdin: Any = None, stdout: Any = None) -> None: ...

    def begin_drain(self) -> None: ...

    def end_keep_alive(self) -> None: ...


class Startable(Protocol):
    """An app with a lifecycle the ASGI lifespan drives."""

    async def startup(self) -> None: ...

    async def shutdown(self) -> None: ...


async def lifespan_protocol(app: Startable, receive: Receive, send: Send) -> None:
    """Answer the ASGI lifespan messages with ``app``'s startup and shutdown (first putting the
    HTTP ceilings on the server that runs the lifespan: :func:`apply_http_limits`)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            apply_http_limits(receive, at_startup=True)
            try:
                await app.startup()
            except Exception as exc:
                logging.getLogger("mcpcore.app").error("startup failed: %s", exc)
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await app.shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


NAMED_PROTOCOL = "--http mcpcore.http_limits:LimitedHttpToolsProtocol"
"""How plain uvicorn is told to serve with the HTTP ceilings."""


def _uvicorn_config(receive: Receive) -> Any:
    """The ``uvicorn.Config`` of the uvicorn whose ``receive`` this is (its lifespan's, or a
    request's, whose cycle reports to the connection's protocol), else ``None``."""
    owner = getattr(receive, "__self__", None)
    config = getattr(owner, "config", None)
    if config is None:
        protocol = getattr(getattr(owner, "on_response", None), "__self__", None)
        config = getattr(protocol, "config", None)
    if config is None:
        return None
    from uvicorn import Config

    return config if isinstance(config, Config) else None


def apply_http_limits(receive: Receive, *, at_startup: bool) -> bool:
    """Have the uvicorn that serves the app (found through ``receive``) build its connections
    with :class:`~mcpcore.http_limits.LimitedHttpToolsProtocol`: header caps, read deadlines and
    the connection bound (uvicorn reads its protocol class per connection, so this holds for
    every connection accepted from now on). Under uvicorn's httptools protocol (its default)
    they are applied; under another protocol (``--http h11``, your own) or, at startup, another
    server, a warning names how to get them. Returns whether the limits are in force."""
    config = _uvicorn_config(receive)
    if config is None:
        if at_startup:
            log.warning("mcpcore cannot tell which server runs it: the HTTP ceilings (MCP_HTTP_MAX_HEADER_BYTES, "
                        "MCP_HTTP_HEADER_TIMEOUT_MS, MCP_HTTP_MAX_CONNECTIONS, ...) are enforced only by `mcpcore "
                        "run` or `uvicorn %s`; otherwise enforce them in front (a reverse proxy)", NAMED_PROTOCOL)
        return False
    served = getattr(config, "http_protocol_class", None)
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        from .http_limits import LimitedHttpToolsProtocol
    except ImportError:  # no httptools: uvicorn serves with h11
        HttpToolsProtocol = LimitedHttpToolsProtocol = None  # type: ignore[assignment,misc]
    if LimitedHttpToolsProtocol is not None and isinstance(served, type):
        if issubclass(served, LimitedHttpToolsProtocol):
            return True
        if served is HttpToolsProtocol:
            config.http_protocol_class = LimitedHttpToolsProtocol
            log.info("uvicorn serves this app with mcpcore's HTTP ceilings (mcpcore.http_limits)")
            return True
    name = getattr(served, "__name__", repr(served))
    log.warning("uvicorn serves this app with %s: the HTTP ceilings (MCP_HTTP_MAX_HEADER_BYTES, "
                "MCP_HTTP_HEADER_TIMEOUT_MS, MCP_HTTP_MAX_CONNECTIONS, ...) are not enforced; serve it with "
                "`mcpcore run` or `uvicorn %s` (httptools installed)", name, NAMED_PROTOCOL)
    return False


def settings_of(app: Any) -> Settings:
    """The app's own settings, or the environment's for any other ASGI app (a FastAPI app that
    mounts an McpApp, say)."""
    own = getattr(app, "settings", None)
    return own if isinstance(own, Settings) else Settings.from_env()


def _is_mcp_app(app: Any) -> bool:
    return isinstance(app, Servable)


def endpoint_url(app: Any, host: str, port: int) -> str:
    """Where a client connects: the McpApp's endpoint, or the base URL of any other ASGI app."""
    base = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    return base + app.path if _is_mcp_app(app) else base


def serving_line(app: Any, transport: str, host: str = "", port: int = 0) -> str:
    """The one line ``mcpcore run`` logs once it serves: the endpoint URL and the transport."""
    if transport == "stdio":
        return "mcpcore listening on stdio (JSON-RPC lines on stdin and stdout; logs on stderr)"
    url = endpoint_url(app, host, port)
    if not _is_mcp_app(app):
        return (f"mcpcore listening on {url} (HTTP; an ASGI app, its MCP endpoint is where it mounts the McpApp; "
                "Ctrl+C to quit)")
    base = endpoint_url(None, host, port)
    extra = f", and HTTP+SSE (2024-11-05) at {base}/sse" if app.settings.http_sse else ""
    return f"mcpcore listening on {url} (MCP over Streamable HTTP{extra}; Ctrl+C to quit)"


def check_shared_store(settings: Settings, workers: int = 1) -> None:
    """Refuse in-memory stores when ``MCP_REQUIRE_SHARED_STORE`` says the server runs as several
    processes; warn when ``workers`` > 1 would split them between the workers.

    Raises:
        ConfigurationError: ``MCP_REQUIRE_SHARED_STORE=true`` with ``MCP_SESSION_STORE=memory``.
    """
    if store_kind("sessions", settings.session_store).shared:
        return
    if settings.require_shared_store:
        raise ConfigurationError(
            "MCP_REQUIRE_SHARED_STORE=true but MCP_SESSION_STORE=memory: sessions, event buffers and tasks would "
            "live in each process alone; set MCP_SESSION_STORE=redis and REDIS_URL")
    if workers > 1:
        log.warning(f"--workers {workers} with MCP_SESSION_STORE=memory: each worker keeps its own sessions, event "
                    "buffers and tasks, so a client whose next request reaches another worker gets 404 Session not "
                    "found; set MCP_SESSION_STORE=redis and REDIS_URL, or MCP_REQUIRE_SHARED_STORE=true to refuse "
                    "to start like this", extra={"fields": {"workers": workers, "setting": "MCP_SESSION_STORE"}})


def serve(app: Any, transport: str, *, host: str, port: int, workers: int = 1, reload: bool = False,
          target: str | None = None) -> None:
    """Serve ``app`` over stdio or HTTP (uvicorn with uvloop and httptools).

    ``app`` is an McpApp or any ASGI app; stdio needs an McpApp.
    """
    settings = settings_of(app)
    if transport == "stdio":
        if not _is_mcp_app(app):
            raise ConfigurationError(f"stdio serves an McpApp, not a {type(app).__name__}")
        configure_logging(settings.log_level)
        warn_unknown_variables()

        async def stdio() -> None:  # says it serves once asyncio.run turns Ctrl+C into a cancellation
            log.info(serving_line(app, "stdio"), extra={"fields": {"transport": "stdio"}})
            await app.serve_stdio()

        try:
            asyncio.run(stdio())
        except KeyboardInterrupt:
            pass
        return
    import uvicorn

    configure_logging(settings.log_level)
    warn_unknown_variables()
    if _is_mcp_app(app):
        _ = app.session_mode  # a contradictory session configuration fails here, before binding
    check_shared_store(settings, workers if target is not None else 1)
    from .redis_startup import preflight

    asyncio.run(preflight(settings))  # a wrong password or database: exit 2 before any worker starts
    # Every process uvicorn starts (workers, the reload child) applies this configuration itself.
    options: dict[str, Any] = {"host": host, "port": port, "log_level": "warning", "access_log": False,
                               "lifespan": "on", "timeout_graceful_shutdown": DRAIN_SECONDS,
                               "log_config": logging_config(settings.log_level)}
    try:
        import uvloop  # noqa: F401
        options["loop"] = "uvloop"
    except ImportError:
        pass
    try:
        from .http_limits import HttpLimits, LimitedHttpToolsProtocol, set_limits
    except ImportError:  # no httptools: h11, which caps an incomplete head at this many bytes
        limits = None
        options["h11_max_incomplete_event_size"] = settings.http_max_header_bytes
    else:  # header caps, read deadlines and a connection bound (mcpcore.http_limits)
        limits = HttpLimits.from_settings(settings)
        options["http"] = LimitedHttpToolsProtocol
    if (workers > 1 or reload) and target is not None:
        _announce(app, host, port)
        with _multiprocess_metrics(settings.metrics_enabled and workers > 1):
            uvicorn.run(target, workers=workers, reload=reload, **options)
        return
    config = uvicorn.Config(app, **options)
    if limits is not None:
        set_limits(config, limits)
    server = _draining_server_class()(config)
    server.mcp_app = app if _is_mcp_app(app) else None
    server.served_app = app
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it shut down on; the shutdown is done
        return
    if not server.started:  # the app's startup failed (logged): exit as uvicorn does
        raise SystemExit(3)


def warn_unknown_variables(environ: Mapping[str, str] | None = None) -> None:
    """Log a warning for each ``MCP_*``/``OAUTH_*``/``STORAGE_*`` variable no setting reads (a
    misspelling is otherwise ignored in silence), with the closest known name."""
    for name, close in Settings.unknown_variables(environ):
        hint = f"did you mean {close}?" if close else "no setting is named like it (ignore this if your app reads it)"
        log.warning("%s is not an mcpcore setting and is ignored; %s", name, hint,
                    extra={"fields": {"variable": name, "closest": close}})


@contextlib.contextmanager
def _multiprocess_metrics(on: bool) -> Iterator[None]:
    """With metrics under several workers: the folder where prometheus-client's multiprocess
    mode keeps each worker's values (``PROMETHEUS_MULTIPROC_DIR``, emptied first; a temporary
    one, removed at the end, when unset). Workers inherit it before they import the library."""
    if not on:
        yield
        return
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    folder = Path(given) if given else Path(tempfile.mkdtemp(prefix="mcpcore-metrics-"))
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):  # values of an earlier run would be added to this one's
        stale.unlink()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    try:
        yield
    finally:
        if not given:
            shutil.rmtree(folder, ignore_errors=True)
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)


def _announce(app: Any, host: str, port: int) -> None:
    log.info(serving_line(app, "http", host, port),
             extra={"fields": {"url": endpoint_url(app, host, port), "transport": "http"}})


def _draining_server_class() -> Any:
    import uvicorn

    class DrainingServer(uvicorn.Server):
        """uvicorn that, on SIGTERM/SIGINT, first ends the app's long-lived streams so the
        graceful shutdown finishes in-flight requests instead of waiting on idle streams."""

        mcp_app: Any = None
        served_app: Any = None

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:  # bound: say where, with the port the OS gave for --port 0
                for listener in self.servers:
                    for sock in listener.sockets:
                        address = sock.getsockname()
                        if isinstance(address, tuple):
                            _announce(self.served_app, address[0], address[1])
                            return

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.mcp_app is not None and not self.should_exit:
                try:
                    asyncio.get_event_loop().call_soon_threadsafe(self.mcp_app.begin_drain)
                except RuntimeError:
                    pass
            super().handle_exit(sig, frame)

        async def shutdown(self, sockets: Any = None) -> None:
            if self.mcp_app is not None:
                for listener in self.servers:
                    listener.close()
                for sock in sockets or []:
                    sock.close()
                self.mcp_app.end_keep_alive()
                await _quiesce(self.server_state)
            await super().shutdown(sockets=sockets)

    return DrainingServer


async def _quiesce(state: Any, quiet: float = 0.1, limit: float = QUIESCE_SECONDS) -> None:
    """Wait, at most ``limit`` seconds, until no request has started for ``quiet`` seconds.

    The listener is closed and every response now says ``Connection: close``, so busy clients
    leave on their next response; only then are the remaining idle keep-alive connections
    closed, which a client could otherwise be writing a request into at that very moment."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    seen = state.total_requests
    while loop.time() < deadline and state.connections:
        await asyncio.sleep(quiet)
        if state.total_requests == seen:
            return
        seen = state.total_requests


def connection_close(send: Send) -> Send:
    """``send`` adding ``Connection: close`` to the response (a draining server)."""
    async def closing_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
        await send(message)
    return closing_send
