"""``mcpcore run module:app`` and friends."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from typing import Any

from ._version import __version__
from .config import Settings
from .errors import ConfigurationError
from .logs import configure_logging

__all__ = ["lint_command", "load_app", "main", "serve"]


def load_app(target: str) -> Any:
    """Import ``module:attribute`` (the attribute defaults to ``app``)."""
    module_name, _, attr = target.partition(":")
    if not module_name:
        raise ConfigurationError(f"expected module:app, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in (attr or "app").split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ConfigurationError(f"{target!r}: {module_name} has no attribute {attr or 'app'!r}")
    return obj


def _settings(app: Any) -> Settings:
    """The app's own settings, or the environment's for any other ASGI app (a FastAPI app that
    mounts an McpApp, say)."""
    own = getattr(app, "settings", None)
    return own if isinstance(own, Settings) else Settings.from_env()


def _is_mcp_app(app: Any) -> bool:
    from .app import McpApp

    return isinstance(app, McpApp)


def serve(app: Any, transport: str, *, host: str, port: int, workers: int = 1, reload: bool = False,
          target: str | None = None) -> None:
    """Serve ``app`` over stdio or HTTP (uvicorn with uvloop and httptools).

    ``app`` is an McpApp or any ASGI app; stdio needs an McpApp.
    """
    settings = _settings(app)
    if transport == "stdio":
        if not _is_mcp_app(app):
            raise ConfigurationError(f"stdio serves an McpApp, not a {type(app).__name__}")
        configure_logging(settings.log_level)
        try:
            asyncio.run(app.serve_stdio())
        except KeyboardInterrupt:
            pass
        return
    import uvicorn

    configure_logging(settings.log_level)
    if _is_mcp_app(app):
        _ = app.session_mode  # a contradictory session configuration fails here, before binding
    options: dict[str, Any] = {"host": host, "port": port, "log_level": "warning", "access_log": False,
                               "lifespan": "on", "timeout_graceful_shutdown": 5}
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
        uvicorn.run(target, workers=workers, reload=reload, **options)
        return
    config = uvicorn.Config(app, **options)
    if limits is not None:
        set_limits(config, limits)
    server = _draining_server_class()(config)
    server.mcp_app = app if _is_mcp_app(app) else None
    server.run()


def _draining_server_class() -> Any:
    import uvicorn

    class DrainingServer(uvicorn.Server):
        """uvicorn that, on SIGTERM/SIGINT, first ends the app's long-lived streams so the
        graceful shutdown finishes in-flight requests instead of waiting on idle streams."""

        mcp_app: Any = None

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


async def _quiesce(state: Any, quiet: float = 0.1, limit: float = 1.5) -> None:
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


def lint_command(target: str, *, output_format: str = "text", portability: str = "standard",
                 ignore: list[str] | None = None) -> int:
    """``mcpcore lint``: print the findings of ``target``'s definitions; 0 clean, 1 findings, 2 load errors."""
    from .lint import lint_app
    from .server.registry import Registry

    try:
        app = load_app(target)
    except ConfigurationError as exc:
        print(f"mcpcore lint: configuration error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"mcpcore lint: cannot import {target!r}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if not isinstance(app, Registry) and not isinstance(getattr(app, "registry", None), Registry):
        print(f"mcpcore lint: {target!r} is a {type(app).__name__}, not an McpApp", file=sys.stderr)
        return 2
    if portability not in ("standard", "strict"):
        print(f"mcpcore lint: unknown portability {portability!r}", file=sys.stderr)
        return 2
    try:
        report = lint_app(app, portability="strict" if portability == "strict" else "standard",
                          ignore={"*": ignore} if ignore else None)
    except ValueError as exc:  # an --ignore naming no rule
        print(f"mcpcore lint: {exc}", file=sys.stderr)
        return 2
    if output_format == "json":
        print(report.json())
    else:
        if report.findings:
            print(report.text())
        print(f"mcpcore lint: {report.summary()}", file=sys.stderr)
    return 0 if report.passed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcpcore", description="Run and check mcpcore servers.")
    parser.add_argument("--version", action="version", version=f"mcpcore {__version__}")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="serve module:app over HTTP or stdio")
    run.add_argument("target", help="module:attribute of an McpApp")
    run.add_argument("--transport", choices=("http", "stdio"), default=None)
    run.add_argument("--host", default=None)
    run.add_argument("--port", type=int, default=None)
    run.add_argument("--workers", type=int, default=1)
    run.add_argument("--reload", action="store_true")
    lint = sub.add_parser("lint", help="check module:app's definitions (exit 0 clean, 1 findings, 2 load error)")
    lint.add_argument("target", help="module:attribute of an McpApp")
    lint.add_argument("--format", choices=("text", "json"), default="text", dest="output_format",
                      help="one line per finding (text) or a JSON report")
    lint.add_argument("--portability", choices=("standard", "strict"), default="standard",
                      help="strict also flags $defs/$ref and $schema tags")
    lint.add_argument("--ignore", action="append", default=[], metavar="RULE",
                      help="silence a rule (id or pattern) everywhere; repeatable")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "lint":
        return lint_command(args.target, output_format=args.output_format, portability=args.portability,
                            ignore=args.ignore)
    try:
        app = load_app(args.target)
        settings = _settings(app)
        transport = args.transport or settings.transport
        serve(app, transport, host=args.host or settings.http_host,
              port=args.port if args.port is not None else settings.http_port,
              workers=args.workers, reload=args.reload, target=args.target)
    except ConfigurationError as exc:
        print(f"mcpcore: configuration error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
