"""The whole suite under coverage, as ``make test`` runs it: two streams, then the timing-bound tests alone.

1. Every test not marked ``serial``, on ``MCPCORE_TEST_WORKERS`` pytest-xdist workers (2 by default;
   ``0`` runs them in this process), a module's tests kept on one worker (``--dist loadfile``) so its
   module fixtures start once.
2. The tests marked ``serial`` (they bound a duration, and a second stream beside them would eat
   into the bound), with nothing else running.
3. ``coverage combine`` and ``coverage report``, which fails under ``fail_under`` of pyproject.toml.

Coverage starts in every pytest process before anything is imported (``COVERAGE_PROCESS_START``,
read by the ``.pth`` file coverage installs); tests/conftest.py takes the variable away again in
the processes that run tests, so the servers they start are not traced. Arguments are passed to
both pytest runs (``python -m tests.tools.run_suite -x``), as is ``PYTEST_ADDOPTS``.

    python -m tests.tools.run_suite
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def workers() -> int:
    raw = os.environ.get("MCPCORE_TEST_WORKERS", "2").strip()
    try:
        n = int(raw)
    except ValueError:
        raise SystemExit(f"MCPCORE_TEST_WORKERS must be a whole number, not {raw!r}") from None
    if n < 0:
        raise SystemExit(f"MCPCORE_TEST_WORKERS must be 0 or more, not {n}")
    return n


def run(args: list[str], env: dict[str, str]) -> int:
    started = time.monotonic()
    print("+ " + " ".join(args), flush=True)
    rc = subprocess.call(args, cwd=ROOT, env=env)
    print(f"  ({time.monotonic() - started:.0f} s, exit {rc})", flush=True)
    return rc


def main(extra: list[str]) -> int:
    py = sys.executable
    env = {**os.environ, "COVERAGE_PROCESS_START": str(ROOT / "pyproject.toml")}
    subprocess.check_call([py, "-m", "coverage", "erase"], cwd=ROOT)
    n = workers()
    spread = ["-n", str(n), "--dist", "loadfile"] if n else []
    # exit 5: nothing selected (a -k or a path in ``extra`` that holds no serial test)
    first = run([py, "-m", "pytest", "-q", *spread, "-m", "not serial", *extra], env)
    second = run([py, "-m", "pytest", "-q", "-m", "serial", *extra], env)
    subprocess.check_call([py, "-m", "coverage", "combine", "-q"], cwd=ROOT)
    report = run([py, "-m", "coverage", "report"], {k: v for k, v in env.items() if k != "COVERAGE_PROCESS_START"})
    failed = [rc for rc in (first, second) if rc not in (0, 5)] or ([5] if first == second == 5 else [])
    return failed[0] if failed else report


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
