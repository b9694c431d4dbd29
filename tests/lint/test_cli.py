"""``mcpcore lint module:app``: exit codes, one line per finding, JSON; in-process and as a process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcpcore import _json
from mcpcore.cli import main
from mcpcore.lint import lint_app
from tests.lint import broken_defs

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^(?P<severity>error|warning) (?P<rule>[a-z0-9-]+) (?P<kind>tool|resource|prompt):(?P<name>[^:]+): "
                  r"(?P<message>.+) \(fix: (?P<fix>.+)\)$")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["lint", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_findings_exit_1_with_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "tests.lint.broken_defs:app")
    assert code == 1
    lines = out.splitlines()
    assert lines == [f.line() for f in lint_app(broken_defs.app).findings]
    parsed = [LINE.match(ln) for ln in lines]
    assert all(parsed), [ln for ln, m in zip(lines, parsed, strict=True) if not m]
    assert "warning tool-name-portable tool:users.lookup: " in out
    assert "15 error(s), 25 warning(s) in 42 definition(s)" in err


def test_clean_app_exits_0_and_prints_nothing_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "tests.lint.clean_defs:app")
    assert (code, out) == (0, "")
    assert "no findings in 11 definition(s)" in err


def test_json_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "tests.lint.broken_defs:app", "--format", "json", "--portability", "strict")
    assert code == 1
    data = _json.loads(out)
    assert data["passed"] is False and data["portability"] == "strict"
    assert data["counts"] == {"error": 15, "warning": 26, "suppressed": 0}
    assert {f["rule"] for f in data["findings"]} >= {"schema-no-defs", "format-parity"}
    code, out, _ = run(capsys, "tests.lint.clean_defs:app", "--format", "json")
    assert code == 0 and _json.loads(out)["findings"] == []


def test_ignore_flag_silences_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "tests.lint.clean_defs:app", "--portability", "strict", "--ignore", "schema-no-defs")
    assert (code, out) == (0, "")
    assert "1 suppressed" in err
    code, _, err = run(capsys, "tests.lint.clean_defs:app", "--ignore", "no-such-rule")
    assert code == 2 and "names no lint rule" in err


@pytest.mark.parametrize(("target", "message"), [
    ("tests.lint.no_such_module:app", "no module named 'tests.lint.no_such_module'"),
    ("tests.lint.broken_defs:nothing_here", "configuration error"),
    ("tests.lint.broken_defs:RECOVERY", "not an McpApp"),
])
def test_load_errors_exit_2(capsys: pytest.CaptureFixture[str], target: str, message: str) -> None:
    code, out, err = run(capsys, target)
    assert code == 2 and out == ""
    assert message in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["lint"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["lint", "tests.lint.clean_defs:app", "--format", "xml"])
    assert exc.value.code == 2
    capsys.readouterr()


def lint_process(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpcore", "lint", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)


def test_as_a_process() -> None:
    broken = lint_process("tests.lint.broken_defs:app")
    assert broken.returncode == 1, broken.stderr
    rules = [m.group("rule") for m in map(LINE.match, broken.stdout.splitlines()) if m]
    assert len(rules) == len(broken.stdout.splitlines()) == 40 == len(set(rules))
    clean = lint_process("tests.lint.clean_defs:app")
    assert (clean.returncode, clean.stdout) == (0, ""), clean.stderr
    missing = lint_process("tests.lint.no_such_module:app")
    assert missing.returncode == 2 and "no module named 'tests.lint.no_such_module'" in missing.stderr
