"""What the client verbs talk to: a URL, an app in this process (``module:app``, no port), or a
stdio command; and the one-line errors they end with."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..client import Client, Handler, OAuthError
from ..errors import ConfigurationError, McpError
from .errors import UsageError

__all__ = ["Target", "UsageError", "connect", "load_mcp_app", "parse_target"]

_MODULE = re.compile(r"^[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?$")


@dataclass(frozen=True, slots=True)
class Target:
    """Where a verb connects: exactly one of ``url``, ``module`` (``module:app``), ``command``."""

    url: str | None = None
    module: str | None = None
    command: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return self.url or self.module or shlex.join(self.command)


def parse_target(text: str | None, stdio: str | None) -> Target:
    """The target of ``TARGET`` (a URL or ``module:app``) or ``--stdio CMD``."""
    if stdio is not None:
        command = shlex.split(stdio)
        if not command:
            raise UsageError("--stdio needs a command, e.g. --stdio 'python -m myserver'")
        return Target(command=command)
    if not text:
        raise UsageError("name the server: a URL (http://127.0.0.1:8000/mcp), module:app, or --stdio 'CMD'")
    if text.startswith(("http://", "https://")):
        return Target(url=text)
    if _MODULE.match(text):
        return Target(module=text)
    raise UsageError(f"{text!r} is not a server: give a URL (http://host:port/mcp), module:app "
                     "(e.g. server:app), or --stdio 'CMD'")


def load_mcp_app(target: str) -> Any:
    """Import ``module:app`` (from the working directory) and check it is an McpApp."""
    from ..targets import load_app

    try:
        app = load_app(target)
    except ConfigurationError as exc:
        raise UsageError(str(exc)) from None
    except ModuleNotFoundError as exc:
        raise UsageError(f"cannot import {target!r}: no module named {exc.name!r} (run from the folder that holds "
                         "it, or fix the name)") from None
    except Exception as exc:
        raise UsageError(f"cannot import {target!r}: {type(exc).__name__}: {exc}") from None
    if not hasattr(app, "registry") or not hasattr(app, "startup"):
        raise UsageError(f"{target!r} is a {type(app).__name__}, not an McpApp: name the McpApp (module:app)")
    return app


def quiet_app_logs(verbose: bool) -> None:
    """An app served in this process logs its startup lines on stderr as one readable line
    each, and only errors unless ``--verbose``."""
    from .console import ReadableFormatter

    logger = logging.getLogger("mcpcore")
    if logger.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ReadableFormatter())
    handler.setLevel(logging.INFO if verbose else logging.ERROR)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


@contextlib.asynccontextmanager
async def connect(target: Target, *, era: str = "auto", token: str | None = None, headers: list[str] | None = None,
                  seconds: float = 60.0, handlers: dict[str, Handler] | None = None, log_level: str | None = None,
                  on_log: Any = None, verbose: bool = False, oauth: bool = False, oauth_client: str | None = None,
                  oauth_timeout: float = 300.0) -> AsyncIterator[Client]:
    """A connected :class:`~mcpcore.client.Client` for ``target``; connection failures become
    one-line :class:`UsageError`. ``oauth``: sign in when the server asks (a URL only), the tokens
    kept in the user's config folder."""
    extra: dict[str, str] = {}
    for h in headers or []:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header {h!r}: write it as 'Name: value'")
        extra[name.strip()] = value.strip()
    options: dict[str, Any] = {"era": era, "headers": extra, "timeout": seconds, "handlers": handlers,
                               "log_level": log_level, "on_log": on_log,
                               "client_info": {"name": "mcpcore-cli", "version": _version()}}
    if oauth and token is not None:
        raise UsageError("give --oauth or --token, not both")
    if oauth_client is not None and not oauth:
        raise UsageError("--oauth-client goes with --oauth")
    if oauth and target.url is None:
        raise UsageError("--oauth signs in to a URL: an app run in this process or over stdio has no address a "
                         "browser comes back to; serve it (`mcpcore run module:app`) and pass its URL")
    if target.command:
        if token is not None:
            raise UsageError("--token applies to a URL; pass a stdio server its credentials in its environment")
        client = Client(target.command, cwd=os.getcwd(), **options)
    elif target.module is not None:
        quiet_app_logs(verbose)
        app = load_mcp_app(target.module)
        client = Client(app, auth=token, path=getattr(app, "path", "/mcp"), **options)
    else:
        from .signin import cli_oauth

        auth = cli_oauth(target.url, oauth_client, oauth_timeout) if oauth and target.url else token
        client = Client(target.url, auth=auth, **options)
    try:
        await client.__aenter__()
    except httpx.ConnectError as exc:
        raise UsageError(f"cannot reach {target}: {exc} (is the server running? `mcpcore run module:app` "
                         "starts one)") from None
    except httpx.HTTPError as exc:
        raise UsageError(f"cannot talk to {target}: {type(exc).__name__}: {exc}") from None
    except OAuthError as exc:
        raise UsageError(f"signing in to {target} failed: {exc.message}") from None
    except McpError as exc:
        if getattr(exc, "http_status", None) == 401:
            hint = "sign in with --oauth, or pass --token TOKEN" if target.url and not oauth and token is None \
                else "pass --token TOKEN (or --header 'Authorization: ...')"
            raise UsageError(f"{target} wants credentials: {hint}") from None
        raise UsageError(f"{target}: {exc.message}") from None
    try:
        yield client
    finally:
        await client.close()


def _version() -> str:
    from .._version import __version__

    return __version__
