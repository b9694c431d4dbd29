"""The verbs around a server: ``list``, ``call``, ``inspect``, ``dev``, ``install``, ``logout``
(``mcpcore run`` and ``mcpcore lint`` live in :mod:`mcpcore.cli`)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

__all__ = ["VERBS", "add_verbs", "run_verb"]

VERBS = ("list", "call", "inspect", "dev", "install", "logout")

_TARGET = ("the server: a URL (http://127.0.0.1:8000/mcp), or module:app to run it in this process "
           "(no port); or leave it out and give --stdio")


def _client_options(p: argparse.ArgumentParser, json_flag: str = "--json") -> None:
    p.add_argument("--stdio", metavar="CMD", default=None,
                   help="run the server as a subprocess and speak stdio to it, e.g. --stdio 'python -m myserver'")
    p.add_argument("--era", choices=("auto", "modern", "legacy"), default="auto",
                   help="protocol era: auto tries 2026-07-28 (server/discover), then the 2025 handshake")
    p.add_argument("--token", default=None, help="a bearer token sent as 'Authorization: Bearer TOKEN' (URLs)")
    p.add_argument("--oauth", action="store_true",
                   help="sign in with OAuth when the server asks (URLs): the browser opens (or the URL is printed), "
                        "the tokens are kept in the user's config folder for the next run; `mcpcore logout URL` "
                        "forgets them")
    p.add_argument("--oauth-client", default=None, metavar="ID|URL",
                   help="with --oauth: the client to sign in as, a client id registered at the authorization server "
                        "or the https URL of this client's metadata document (default: register dynamically)")
    p.add_argument("--oauth-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="with --oauth: how long to wait for the sign-in in the browser (default 300)")
    p.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="an extra HTTP header on every request; repeatable")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="how long to wait for each answer (default 60)")
    p.add_argument(json_flag, action="store_true", dest="json_output",
                   help="print JSON even on a terminal (the default when the output is piped)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show the log lines of an app run in this process (module:app), not only its errors")


class _Intermixed(argparse.ArgumentParser):
    """A verb's parser that takes options between its words (``call URL TOOL --task a=1``)."""

    _inner = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._inner:  # parse_known_intermixed_args calls back here for its two passes
            return super().parse_known_args(args, namespace)
        self._inner = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inner = False


def add_verbs(sub: Any) -> None:
    """Add the verbs' parsers to ``mcpcore``'s subcommands."""
    saved, sub._parser_class = sub._parser_class, _Intermixed
    try:
        _add(sub)
    finally:
        sub._parser_class = saved


def _add(sub: Any) -> None:
    p = sub.add_parser("list", help="list a server's tools, prompts, resources or resource templates",
                       description="List what a server offers: mcpcore list TARGET [tools|prompts|resources|templates]")
    p.add_argument("words", nargs="*", metavar="TARGET [KIND]",
                   help=_TARGET + "; then what to list: tools (default), prompts, resources or templates")
    _client_options(p)

    p = sub.add_parser("call", help="call a tool: mcpcore call TARGET TOOL key=value ...",
                       description="Call a tool. Each key=value is an argument: the value is taken as JSON when "
                                   "it parses (42, true, [1,2]) unless the tool's schema wants a string.")
    p.add_argument("words", nargs="*", metavar="TARGET TOOL [key=value ...]",
                   help=_TARGET + "; the tool's name; its arguments as key=value")
    p.add_argument("--json", dest="json_args", default=None, metavar="ARGS",
                   help="the arguments as one JSON object (key=value pairs are added on top)")
    p.add_argument("--task", action="store_true",
                   help="ask for a task (the server decides), then wait for it, answering its questions")
    _client_options(p, json_flag="--output-json")  # --json names the arguments here

    p = sub.add_parser("inspect", help="show a server: identity, capabilities, every definition and its schemas, "
                                       "its server card, and lint findings (module:app)")
    p.add_argument("words", nargs="*", metavar="TARGET", help=_TARGET)
    _client_options(p)

    p = sub.add_parser("dev", help="serve module:app for development: restart on changes, readable logs, "
                                   "the Inspector command")
    p.add_argument("target", help="module:attribute of an McpApp")
    p.add_argument("--host", default=None, help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port to bind (default MCP_HTTP_PORT, 8000)")
    p.add_argument("--no-reload", action="store_false", dest="reload", help="do not restart on code changes")
    p.add_argument("--log-level", default=None, help="debug, info, notice, warning, error (default MCP_LOG_LEVEL)")
    p.add_argument("--log-format", choices=("readable", "json"), default=None, dest="log_format",
                   help="readable lines (the default on a terminal) or JSON lines")

    from .install import CLIENTS

    p = sub.add_parser("install", help="add a server to Claude Desktop, Claude Code, Cursor or VS Code",
                       description="Write the server into the client's own configuration file (a backup first).")
    p.add_argument("client", choices=CLIENTS, help="the MCP client to configure")
    p.add_argument("target", help="module:app (run over stdio by this Python) or the server's URL")
    p.add_argument("--name", default=None, help="the server's name in the client (default: the app's name)")
    p.add_argument("--scope", choices=("user", "project"), default="user",
                   help="user: the client's own file (default); project: the file in this folder "
                        "(.mcp.json, .cursor/mcp.json, .vscode/mcp.json)")
    p.add_argument("--dry-run", action="store_true", help="print the change to the file; write nothing")

    p = sub.add_parser("logout", help="forget the OAuth tokens --oauth keeps for a server, revoking them there",
                       description="Revoke the grant at the server's authorization server (when it can be told) "
                                   "and forget the tokens and the client --oauth kept for it.")
    p.add_argument("url", nargs="?", default=None, help="the server's URL, as given to --oauth")
    p.add_argument("--all", action="store_true", dest="all_servers", help="every server with kept tokens")


def run_verb(args: argparse.Namespace) -> int:
    """Run one verb; a usage or connection mistake is one line on stderr and exit 2."""
    from .targets import UsageError
    from .verbs import report_error

    verb = args.command
    try:
        if verb == "dev":
            from .dev import check_dev_args, dev_command

            check_dev_args(args)
            args.readable = None if args.log_format is None else args.log_format == "readable"
            return dev_command(args)
        if verb == "install":
            from .install import install_command

            return install_command(args)
        if verb == "logout":
            from .signin import logout_command

            return asyncio.run(logout_command(args))
        from .verbs import call_command, inspect_command, list_command

        command = {"list": list_command, "call": call_command, "inspect": inspect_command}[verb]
        return asyncio.run(command(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `mcpcore list ... | head`: the reader left, which is no error
        import os
        import sys

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, Exception) as exc:
        return report_error(verb, exc)
