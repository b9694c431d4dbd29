"""The instruction budget (issue 26): instructions per request of the common requests, counted in
process under callgrind (benchmarks/budget/), held to benchmarks/budget/budgets.toml with 2 %
allowed; the driver's requests answered right outside valgrind; and the verdict, the table and
the budget file's rewriting on made-up counts."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import pytest
import uvloop

from benchmarks.budget.check import BUDGET_FILE, Budgets, environment, load, table, verdict, write
from benchmarks.budget.count import (
    GCC_HINT,
    VALGRIND_HINT,
    BudgetError,
    Count,
    build_marks,
    count,
    tools,
    valgrind_version,
)
from benchmarks.budget.driver import CASES, GROUPS, LIMIT_CASES, REQUESTS, check, run_group


@pytest.mark.slow
@pytest.mark.timeout(900)  # ~45 s of CPU; the count itself never depends on how long it takes
def test_every_request_is_within_its_instruction_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        valgrind, _ = tools()
        counts = count(tmp_path)
    except BudgetError as exc:
        pytest.fail(str(exc))
    budgets = load()
    shown = table(counts, budgets)
    with capsys.disabled():
        print("\n" + shown)
    problems = verdict(counts, budgets, environment(valgrind_version(valgrind)))
    assert not problems, "\n".join([*problems, "", shown, f"callgrind's dumps: {tmp_path} (callgrind_annotate FILE "
                                                          "shows where the instructions go)"])


def test_without_valgrind_the_count_fails_with_the_install_command(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BudgetError, match="apt-get install -y valgrind") as err:
        count(tmp_path / "work")
    assert str(err.value) == VALGRIND_HINT


def test_without_gcc_the_count_fails_with_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    valgrind, _ = tools()
    (tmp_path / "valgrind").symlink_to(valgrind)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BudgetError, match="apt-get install -y gcc") as err:
        count(tmp_path / "work")
    assert str(err.value) == GCC_HINT


def test_the_driver_counts_right_answers_and_leaves_nothing_running(tmp_path: Path) -> None:
    """Outside valgrind the marks do nothing: the same code answers every request of every group."""
    marks = ctypes.CDLL(str(build_marks(tools()[1], tmp_path)))
    for cases in GROUPS.values():
        out = uvloop.run(run_group(cases, marks))
        assert set(out) == {c.key for c in cases}
        assert all(r["cycles_per_request"] == 0 for r in out.values()), out


def test_a_wrong_answer_is_not_counted() -> None:
    req = REQUESTS["call_2026"]
    right: list[dict[str, Any]] = [{"type": "http.response.start", "status": 200},
             {"type": "http.response.body", "body": b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text",'
                                                    b'"text":"hello from the benchmark"}]}}'}]
    assert check(req, right) is None
    wrong = [right[0], {"type": "http.response.body", "body": b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'}]
    assert "wrong answer" in (check(req, wrong) or "")
    assert "HTTP 500" in (check(req, [{"type": "http.response.start", "status": 500}]) or "")
    assert check(REQUESTS["tools_list"], right) is not None


def _counts(per_request: dict[str, float]) -> dict[str, Count]:
    limits = {c.key: 50_000.0 for c in LIMIT_CASES}
    return {k: Count(k, v, 0, 0, 0.0) for k, v in {**limits, **per_request}.items()}


BUDGETS = Budgets({c.key: 100_000 for c in CASES}, {"python": "3.11.7"})
AT_BUDGET = {c.key: 100_000.0 for c in CASES}


def test_a_count_more_than_two_percent_over_its_budget_fails_with_the_figures_and_the_fix() -> None:
    assert verdict(_counts(AT_BUDGET), BUDGETS, {"python": "3.11.7"}) == []
    assert verdict(_counts({**AT_BUDGET, "call_2026": 101_999.0}), BUDGETS, {"python": "3.11.7"}) == []
    problems = verdict(_counts({**AT_BUDGET, "call_2026": 103_000.0}), BUDGETS, {"python": "3.11.7"})
    assert len(problems) == 1
    msg = problems[0]
    assert msg.startswith("call_2026: 103,000 instructions per request, budget 100,000: +3.0 % (at most +2 % allowed).")
    assert "raise `call_2026` in benchmarks/budget/budgets.toml" in msg and "commit message" in msg


def test_a_missing_or_unknown_budget_and_changed_versions_are_named() -> None:
    budgets = Budgets({**{c.key: 100_000 for c in CASES[1:]}, "gone": 5}, {"python": "3.11.7"})
    problems = verdict(_counts(AT_BUDGET), budgets, {"python": "3.12.1"})
    assert problems[0].startswith(f"{CASES[0].key}: 100,000 instructions per request and no budget: add "
                                  f"`{CASES[0].key} = 100000`")
    assert "has budgets for no counted request: gone" in problems[1]
    assert "python 3.11.7 -> 3.12.1" in problems[2]


def test_the_table_sets_each_count_against_its_budget_and_the_pure_asgi_limit() -> None:
    shown = table(_counts({**AT_BUDGET, "tools_list": 90_000.0}), BUDGETS)
    row = next(line for line in shown.splitlines() if line.startswith("| layers_2026 "))
    assert "100,000" in row and "+0.00 %" in row and "50,000" in row and "2.00x" in row
    assert shown.splitlines()[-1] == ("under budget by more than 2 %: lower it in the commit that earned it: "
                                      "tools_list = 90000")


def test_the_budget_file_has_one_budget_per_request_and_says_how_to_change_one(tmp_path: Path) -> None:
    budgets = load()
    assert set(budgets.limits) == {c.key for c in CASES} and all(v > 10_000 for v in budgets.limits.values())
    assert {"python", "valgrind", "machine"} <= set(budgets.measured_on)
    header = BUDGET_FILE.read_text().split("[budget]")[0]
    assert "one-line change" in header and "reason in the commit message" in header
    copy = tmp_path / "budgets.toml"
    copy.write_text(BUDGET_FILE.read_text())
    changed = write(_counts({**AT_BUDGET, "call_2025": 99_000.4}), {"python": "9.9"}, copy)
    assert "call_2025: " in " ".join(changed)
    again = load(copy)
    assert again.limits == {**{c.key: 100_000 for c in CASES}, "call_2025": 99_000}
    assert again.measured_on == {"python": "9.9"}
    assert copy.read_text().split("[budget]")[0] == header


def test_a_broken_budget_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "budgets.toml"
    bad.write_text("call_2026 = 1\n")
    with pytest.raises(ValueError, match=r"budgets.toml: not a budget file .* \[budget\] table"):
        load(bad)


def test_every_request_of_the_budget_is_counted_on_the_limit_too() -> None:
    assert {c.request for c in CASES} <= {c.request for c in LIMIT_CASES}
