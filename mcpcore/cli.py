"""``mcpcore run module:app`` and friends (the client verbs are in :mod:`mcpcore.commands`)."""

from __future__ import annotations

import argparse
import sys

from ._version import __version__
from .errors import ConfigurationError
from .serving import endpoint_url, serve, serving_line, settings_of
from .targets import check_servable, load_app

__all__ = ["endpoint_url", "lint_command", "load_app", "main", "serve", "serving_line"]


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
    from .commands import VERBS, add_verbs, run_verb

    parser = argparse.ArgumentParser(prog="mcpcore", description="Run, check, call and install MCP servers.")
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
    add_verbs(sub)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command in VERBS:
        return run_verb(args)
    if args.command == "lint":
        return lint_command(args.target, output_format=args.output_format, portability=args.portability,
                            ignore=args.ignore)
    try:
        app = load_app(args.target)
        check_servable(app, args.target)
        settings = settings_of(app)
        transport = args.transport or settings.transport
        serve(app, transport, host=args.host or settings.http_host,
              port=args.port if args.port is not None else settings.http_port,
              workers=args.workers, reload=args.reload, target=args.target)
    except ConfigurationError as exc:
        print(f"mcpcore: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl+C before the server ran (importing, connecting to Redis)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
