"""README.md's configuration table is exactly what docs/tools/config_table.py prints."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from mcpcore import Settings

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "tools" / "config_table.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_table_matches_the_script() -> None:
    script = _script()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script.readme_section(readme) == script.section(), (
        "README.md's configuration table is out of date: run .venv/bin/python docs/tools/config_table.py --write")


def test_every_setting_is_in_the_table_with_its_default() -> None:
    table = _script().table()
    rows = table.splitlines()[2:]
    assert len(rows) == len(Settings.variables())
    for (var, _field, _default), row in zip(Settings.variables(), rows, strict=True):
        assert row.startswith(f"| `{var}` | ")


def test_a_setting_without_a_meaning_fails_the_script(monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    monkeypatch.delitem(script.MEANINGS, "MCP_LOG_LEVEL")
    with pytest.raises(SystemExit, match="no meaning for \\['MCP_LOG_LEVEL'\\]"):
        script.table()


def test_the_script_runs_from_the_command_line() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.startswith("| Variable | Default | Meaning |")
    check = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert check.returncode == 0, check.stderr
