"""``mcpcore dev module:app``: serve on a loopback port, restart on every change to the code,
log for a person at a terminal, and say how to open the Inspector on it."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..logs import LEVELS, logging_config, normalize_level
from .targets import UsageError, load_mcp_app

__all__ = ["dev_command", "inspector_command"]


def inspector_command(url: str) -> str:
    """The shell command that opens the MCP Inspector (web UI) on ``url``."""
    return f"npx @modelcontextprotocol/inspector --transport http --server-url {url} --protocol-era auto"


def dev_logging(level: str, readable: bool) -> dict[str, Any]:
    """uvicorn's ``log_config`` for dev: readable lines on a terminal, JSON lines otherwise."""
    config = logging_config(level)
    if readable:
        config["formatters"] = {"readable": {"()": "mcpcore.commands.console.ReadableFormatter"}}
        config["handlers"]["stderr"]["formatter"] = "readable"
        config["loggers"]["uvicorn"]["level"] = LEVELS["info"]  # "Started reloader", "Reloading..."
        config["loggers"]["uvicorn.error"]["level"] = LEVELS["info"]
    return config


def dev_command(args: argparse.Namespace) -> int:
    """Serve ``args.target`` with uvicorn's reloader until Ctrl+C."""
    import uvicorn

    from ..serving import endpoint_url, settings_of

    app = load_mcp_app(args.target)  # a mistake in the code stops here, once, with one line
    settings = settings_of(app)
    host = args.host or "127.0.0.1"
    port = args.port if args.port is not None else settings.http_port
    level = normalize_level(args.log_level or settings.log_level) or "info"
    url = endpoint_url(app, host, port)
    readable = sys.stderr.isatty() if args.readable is None else args.readable
    watch = [os.getcwd()]
    print(f"mcpcore dev: serving {args.target} at {url}" +
          (f", restarting on changes under {watch[0]}" if args.reload else ""), flush=True)
    print(f"Inspector: {inspector_command(url)}", flush=True)
    print("Ctrl+C to stop.", flush=True)
    try:
        uvicorn.run(args.target, host=host, port=port, reload=args.reload, reload_dirs=watch if args.reload else None,
                    log_config=dev_logging(level, readable), access_log=False, lifespan="on", log_level="info")
    except KeyboardInterrupt:
        pass
    return 0


def check_dev_args(args: argparse.Namespace) -> None:
    """Refuse what uvicorn would only fail on later."""
    if args.port is not None and not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port}: give a port between 1 and 65535")
    if args.log_level is not None and normalize_level(args.log_level) is None:
        raise UsageError(f"--log-level {args.log_level!r}: one of {', '.join(LEVELS)}")
