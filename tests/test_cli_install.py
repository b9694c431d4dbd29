"""``mcpcore install CLIENT TARGET`` against temporary home directories: each client's own file,
in its own format, a backup before a change, nothing changed twice, ``--dry-run``; and the entry
written for a module:app really starts the server from another directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpcore.client import Client
from mcpcore.commands.install import config_path
from tests.servers import ROOT

ENV = {k: v for k, v in os.environ.items()
       if not k.startswith("MCP_") and k not in ("XDG_CONFIG_HOME", "APPDATA", "CLAUDE_CONFIG_DIR")}
# Where each client reads its servers on Linux under HOME, and the key it keeps them under.
FILES = {"claude-desktop": (".config/Claude/claude_desktop_config.json", "mcpServers"),
         "claude-code": (".claude.json", "mcpServers"),
         "cursor": (".cursor/mcp.json", "mcpServers"),
         "vscode": (".config/Code/User/mcp.json", "servers")}


def install(home: Path, *args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpcore", "install", *args], cwd=cwd,
                          env={**ENV, "HOME": str(home), **env}, capture_output=True, text=True, timeout=120)


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("client", list(FILES))
async def test_a_module_app_is_installed_as_a_stdio_command_that_starts(client: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = install(home, client, "examples.everything:app")
    assert proc.returncode == 0, proc.stderr
    rel, key = FILES[client]
    path = home / rel
    assert f"'mcpcore-everything' added in {path}" in proc.stdout
    entry = read(path)[key]["mcpcore-everything"]
    assert entry["command"] == sys.executable
    assert entry["args"] == ["-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio"]
    assert entry["env"] == {"PYTHONPATH": str(ROOT)}
    assert entry.get("type") == ("stdio" if client in ("claude-code", "vscode") else None)
    elsewhere = tmp_path / "elsewhere"  # clients start servers from a directory of their own
    elsewhere.mkdir()
    async with Client([entry["command"], *entry["args"]], cwd=str(elsewhere), env=entry["env"]) as started:
        assert "search" in {t["name"] for t in await started.list_tools()}


@pytest.mark.parametrize(("client", "entry"), [
    ("claude-desktop", {"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.example.com/mcp"]}),
    ("claude-code", {"type": "http", "url": "https://mcp.example.com/mcp"}),
    ("cursor", {"url": "https://mcp.example.com/mcp"}),
    ("vscode", {"type": "http", "url": "https://mcp.example.com/mcp"}),
])
def test_a_url_is_installed_in_each_clients_shape(client: str, entry: dict[str, Any], tmp_path: Path) -> None:
    proc = install(tmp_path, client, "https://mcp.example.com/mcp")
    assert proc.returncode == 0, proc.stderr
    rel, key = FILES[client]
    assert read(tmp_path / rel) == {key: {"mcp-example-com": entry}}


def test_backup_first_other_entries_kept_and_nothing_changed_twice(tmp_path: Path) -> None:
    path = tmp_path / ".claude.json"
    before = {"numStartups": 12, "projects": {"/src": {"mcpServers": {}}},
              "mcpServers": {"other": {"type": "http", "url": "https://other.example.com/mcp"}}}
    path.write_text(json.dumps(before, indent=4), encoding="utf-8")
    old_text = path.read_text(encoding="utf-8")
    proc = install(tmp_path, "claude-code", "https://mcp.example.com/mcp", "--name", "mine")
    assert proc.returncode == 0 and "(backup: " in proc.stdout
    assert (tmp_path / ".claude.json.bak").read_text(encoding="utf-8") == old_text
    after = read(path)
    assert after["numStartups"] == 12 and after["projects"] == before["projects"]
    assert after["mcpServers"] == {**before["mcpServers"], "mine": {"type": "http", "url": "https://mcp.example.com/mcp"}}
    written = path.read_bytes()
    (tmp_path / ".claude.json.bak").unlink()
    again = install(tmp_path, "claude-code", "https://mcp.example.com/mcp", "--name", "mine")
    assert again.returncode == 0 and "already installed" in again.stdout and "nothing changed" in again.stdout
    assert path.read_bytes() == written and not (tmp_path / ".claude.json.bak").exists()
    moved = install(tmp_path, "claude-code", "https://mcp2.example.com/mcp", "--name", "mine")
    assert "'mine' replaced" in moved.stdout and read(path)["mcpServers"]["mine"]["url"].startswith("https://mcp2")


def test_dry_run_prints_the_change_and_writes_nothing(tmp_path: Path) -> None:
    proc = install(tmp_path, "cursor", "examples.everything:app", "--dry-run", "--name", "shop")
    assert proc.returncode == 0, proc.stderr
    assert f"+++ {tmp_path / '.cursor/mcp.json'} (after install)" in proc.stdout
    assert '+    "shop": {' in proc.stdout and "--dry-run: 'shop' would be added; nothing written" in proc.stdout
    assert not (tmp_path / ".cursor").exists()


def test_each_client_reads_its_own_environment(tmp_path: Path) -> None:
    xdg, claude_dir = tmp_path / "xdg", tmp_path / "claude"
    for client in ("claude-desktop", "vscode"):
        assert install(tmp_path, client, "https://h.example.com/mcp", XDG_CONFIG_HOME=str(xdg)).returncode == 0
    assert (xdg / "Claude" / "claude_desktop_config.json").exists() and (xdg / "Code/User/mcp.json").exists()
    proc = install(tmp_path, "claude-code", "https://h.example.com/mcp", CLAUDE_CONFIG_DIR=str(claude_dir))
    assert proc.returncode == 0, proc.stderr
    assert (claude_dir / ".claude.json").exists()
    project = tmp_path / "project"
    project.mkdir()
    for client, rel in (("claude-code", ".mcp.json"), ("cursor", ".cursor/mcp.json"), ("vscode", ".vscode/mcp.json")):
        proc = install(tmp_path, client, "https://h.example.com/mcp", "--scope", "project", cwd=project)
        assert proc.returncode == 0 and (project / rel).exists(), proc.stderr


def test_macos_and_windows_locations() -> None:
    mac = {"HOME": "/Users/ada"}
    assert config_path("claude-desktop", platform="darwin", environ=mac) == Path(
        "/Users/ada/Library/Application Support/Claude/claude_desktop_config.json")
    assert config_path("vscode", platform="darwin", environ=mac) == Path(
        "/Users/ada/Library/Application Support/Code/User/mcp.json")
    win = {"USERPROFILE": "C:/Users/ada", "APPDATA": "C:/Users/ada/AppData/Roaming"}
    assert config_path("claude-desktop", platform="win32", environ=win) == Path(
        "C:/Users/ada/AppData/Roaming/Claude/claude_desktop_config.json")
    assert config_path("vscode", platform="win32", environ=win) == Path(
        "C:/Users/ada/AppData/Roaming/Code/User/mcp.json")
    assert config_path("cursor", platform="win32", environ=win) == Path("C:/Users/ada/.cursor/mcp.json")
    assert config_path("claude-code", platform="win32", environ=win) == Path("C:/Users/ada/.claude.json")


def test_mistakes_are_one_line_with_the_fix(tmp_path: Path) -> None:
    vscode = tmp_path / ".config/Code/User/mcp.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text('{\n  // my servers\n  "servers": {}\n}\n', encoding="utf-8")
    cases = [
        (("vscode", "https://h.example.com/mcp"), "is not plain JSON"),
        (("cursor", "nowhere:app"), "no module named 'nowhere'"),
        (("cursor", "https://h.example.com/mcp", "--name", "a b"), "--name 'a b': use letters"),
        (("claude-desktop", "https://h.example.com/mcp", "--scope", "project"), "no project configuration"),
    ]
    for args, expected in cases:
        proc = install(tmp_path, *args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and expected in lines[0], (args, proc.stderr)
    assert vscode.read_text(encoding="utf-8").startswith('{\n  // my servers')  # left as it was
