"""``mcpcore run module:app`` and friends."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from typing import Any

from ._version import __version__
from .errors import ConfigurationError
from .logs import configure_logging

__all__ = ["load_app", "main", "serve"]


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


def serve(app: Any, transport: str, *, host: str, port: int, workers: int = 1, reload: bool = False,
          target: str | None = None) -> None:
    """Serve ``app`` over stdio or HTTP (uvicorn with uvloop and httptools)."""
    if transport == "stdio":
        configure_logging(app.settings.log_level)
        try:
            asyncio.run(app.serve_stdio())
        except KeyboardInterrupt:
            pass
        return
    import uvicorn

    configure_logging(app.settings.log_level)
    _ = app.session_mode
    options: dict[str, Any] = {"host": host, "port": port, "log_level": "warning", "access_log": False,
                               "lifespan": "on", "timeout_graceful_shutdown": 5}
    try:
        import uvloop  # noqa: F401
        options["loop"] = "uvloop"
    except ImportError:
        pass
    try:
        import httptools  # noqa: F401
        options["http"] = "httptools"
    except ImportError:
        pass
    if (workers > 1 or reload) and target is not None:
        uvicorn.run(target, workers=workers, reload=reload, **options)
    else:
        uvicorn.run(app, **options)


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
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        app = load_app(args.target)
        transport = args.transport or app.settings.transport
        serve(app, transport, host=args.host or app.settings.http_host,
              port=args.port if args.port is not None else app.settings.http_port,
              workers=args.workers, reload=args.reload, target=args.target)
    except ConfigurationError as exc:
        print(f"mcpcore: configuration error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
