"""``mcpcore install CLIENT TARGET``: add a server to an MCP client's own configuration file.

Each client reads its file from its own place, in its own format (docs/cli.md has the table):
``claude-desktop`` (``mcpServers``, commands only: a URL goes through ``npx mcp-remote``),
``claude-code`` (``~/.claude.json`` or ``./.mcp.json``; ``mcpServers``), ``cursor``
(``~/.cursor/mcp.json`` or ``./.cursor/mcp.json``; ``mcpServers``) and ``vscode`` (the user
profile's ``mcp.json`` or ``./.vscode/mcp.json``; ``servers``).

A ``module:app`` becomes a stdio command: this Python running ``-m mcpcore run module:app
--transport stdio``, with the working directory on ``PYTHONPATH`` (clients start servers from
a directory of their own). The file is backed up (``.bak``) before it changes; installing the
same entry again changes nothing; ``--dry-run`` prints the change and writes nothing.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import _json
from .console import pretty
from .targets import UsageError, load_mcp_app, parse_target

__all__ = ["CLIENTS", "config_path", "entry_for", "install_command", "plan"]

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")


def config_path(client: str, scope: str = "user", *, platform: str | None = None,
                environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """Where ``client`` reads its MCP servers, for ``platform`` (``sys.platform``) and ``environ``."""
    env = os.environ if environ is None else environ
    plat = platform or sys.platform
    here = cwd or Path.cwd()
    home = Path(env.get("USERPROFILE") or env.get("HOME") or "~").expanduser() if plat == "win32" else \
        Path(env.get("HOME") or "~").expanduser()

    def appdata() -> Path:
        return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"

    def xdg() -> Path:
        return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"

    if client == "claude-desktop":
        if scope != "user":
            raise UsageError("claude-desktop has no project configuration: leave out --scope")
        base = appdata() if plat == "win32" else home / "Library" / "Application Support" if plat == "darwin" \
            else xdg()
        return base / "Claude" / "claude_desktop_config.json"
    if client == "claude-code":
        if scope == "project":
            return here / ".mcp.json"
        return Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else \
            home / ".claude.json"
    if client == "cursor":
        return (here if scope == "project" else home) / ".cursor" / "mcp.json"
    if client == "vscode":
        if scope == "project":
            return here / ".vscode" / "mcp.json"
        base = appdata() if plat == "win32" else home / "Library" / "Application Support" if plat == "darwin" \
            else xdg()
        return base / "Code" / "User" / "mcp.json"
    raise UsageError(f"unknown client {client!r}: one of {', '.join(CLIENTS)}")


def entry_for(client: str, *, url: str | None = None, command: list[str] | None = None,
              env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The server entry ``client`` expects for a URL or a stdio command."""
    if url is not None:
        if client == "claude-desktop":
            return {"command": "npx", "args": ["-y", "mcp-remote", url]}
        if client == "cursor":
            return {"url": url}
        return {"type": "http", "url": url}
    assert command is not None
    out: dict[str, Any] = {"command": command[0], "args": command[1:]}
    if client in ("claude-code", "vscode"):
        out = {"type": "stdio", **out}
    if env:
        out["env"] = dict(env)
    return out


def _read(path: Path) -> tuple[str, dict[str, Any]]:
    if not path.exists():
        return "", {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return text, {}
    try:
        data = _json.loads(text)
    except _json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not plain JSON ({exc.msg} at line {exc.lineno}; comments and trailing commas "
                         "are not read): fix the file, or use --dry-run and add the entry by hand") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} holds a {type(data).__name__}, not a JSON object: fix the file first")
    return text, data


def plan(path: Path, client: str, name: str, entry: dict[str, Any]) -> tuple[str, str, str]:
    """``(old text, new text, what happens)`` of installing ``entry`` as ``name`` in ``path``."""
    old, data = _read(path)
    key = "servers" if client == "vscode" else "mcpServers"
    servers = data.get(key)
    if servers is None:
        servers = {}
    if not isinstance(servers, dict):
        raise UsageError(f"{path}: {key!r} is a {type(servers).__name__}, not an object: fix the file first")
    if servers.get(name) == entry:
        return old, old, "unchanged"
    action = "replaced" if name in servers else "added"
    data[key] = {**servers, name: entry}
    return old, pretty(data) + "\n", action


def _write(path: Path, text: str) -> Path | None:
    """Write ``text`` atomically; the previous file, when there was one, is kept as ``.bak``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if backup is not None:
            shutil.copymode(backup, tmp)
        else:  # a new file gets the usual mode, not mkstemp's private one
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup


def _server_name(target: str, app: Any) -> str:
    raw = (getattr(app, "server_info", None) or {}).get("name") if app is not None else None
    if not raw:
        raw = re.sub(r"^https?://", "", target).split("/")[0].split(":")[0] if "://" in target else target.split(":")[0]
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(raw)).strip("-") or "mcp-server"


def install_command(args: argparse.Namespace) -> int:
    """Add ``args.target`` to ``args.client``'s configuration (or print the change)."""
    if args.client not in CLIENTS:
        raise UsageError(f"unknown client {args.client!r}: one of {', '.join(CLIENTS)}")
    target = parse_target(args.target, None)
    app = None
    if target.url is not None:
        entry = entry_for(args.client, url=target.url)
    else:
        assert target.module is not None
        app = load_mcp_app(target.module)  # installs only what starts
        command = [sys.executable, "-m", "mcpcore", "run", target.module, "--transport", "stdio"]
        entry = entry_for(args.client, command=command, env={"PYTHONPATH": os.getcwd()})
    if args.name is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+", args.name):
        raise UsageError(f"--name {args.name!r}: use letters, digits, '-', '_' or '.'")
    name = args.name or _server_name(str(target), app)
    path = config_path(args.client, args.scope)
    old, new, action = plan(path, args.client, name, entry)
    if action == "unchanged":
        print(f"{args.client}: {name!r} is already installed in {path}; nothing changed")
        return 0
    if args.dry_run:
        diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                    fromfile=f"{path} (now)", tofile=f"{path} (after install)")
        sys.stdout.writelines(diff)
        print(f"\n--dry-run: {name!r} would be {action}; nothing written")
        return 0
    backup = _write(path, new)
    print(f"{args.client}: {name!r} {action} in {path}" + (f" (backup: {backup})" if backup else ""))
    if args.client == "claude-desktop" and target.url is not None:
        print("Claude Desktop reaches a URL through `npx mcp-remote` (Node.js needed); restart it to load the server")
    elif args.client == "claude-desktop":
        print("restart Claude Desktop to load the server")
    return 0
