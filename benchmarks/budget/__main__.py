"""The instruction budget from the command line: count, print the table, hold the counts to
``budgets.toml`` (exit 1 when one is over), or write the counts into it.

    .venv/bin/python -m benchmarks.budget                # what tests/test_instruction_budget.py runs
    .venv/bin/python -m benchmarks.budget --write        # set every budget to today's count
    .venv/bin/python -m benchmarks.budget --keep DIR     # keep callgrind's dumps in DIR

``--write`` is for setting the budgets anew (a new request, a new interpreter) and for raising
one: the commit that raises a budget says why in its message. Lowering one is a one-line edit of
the file in the commit that earned it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from .check import BUDGET_FILE, environment, load, table, verdict, write
from .count import BudgetError, count, tools, valgrind_version


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.budget", description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help=f"set the budgets in {BUDGET_FILE.name} to the counts")
    p.add_argument("--keep", type=Path, help="a directory for callgrind's dumps (default: a temporary one)")
    args = p.parse_args(argv)
    started = time.monotonic()
    try:
        valgrind, _ = tools()
        with tempfile.TemporaryDirectory(prefix="mcpcore-budget-") as tmp:
            counts = count(args.keep or Path(tmp))
    except BudgetError as exc:
        print(f"budget: {exc}", file=sys.stderr)
        return 2
    current = environment(valgrind_version(valgrind))
    budgets = load()
    print(table(counts, budgets))
    print(f"counted in {time.monotonic() - started:.0f} s")
    if args.write:
        for line in write(counts, current) or ["(no budget changed)"]:
            print(f"  {line}")
        print(f"wrote {BUDGET_FILE}: a raised budget needs its reason in the commit message")
        return 0
    problems = verdict(counts, budgets, current)
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
