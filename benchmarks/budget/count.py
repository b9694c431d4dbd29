"""Counting the budget's requests: the driver's groups under callgrind, side by side, read back.

Each group of :data:`benchmarks.budget.driver.GROUPS` runs in its own valgrind process (two
processes for two cores), started with instrumentation off (``--instr-atstart=no``): importing
the apps and warming them up run at valgrind's plain speed, and only the counted requests are
instrumented. The driver switches callgrind on and off and dumps its counters through callgrind's
client requests, which :file:`marks.c` wraps in four C functions for ctypes; it is compiled here
with gcc against valgrind's own header.

The heap's layout still moves a count a little (much less after the driver's slices: see
:mod:`benchmarks.budget.driver`), and the layout moves with every path string the interpreter
keeps. So the child sees the same strings from any checkout and any caller: its interpreter is
the checkout's ``.venv/bin/python`` reached through a link of fixed name
(``/tmp/mcpcore-budget-<uid>/slot0/r``), started with ``-S`` (no ``.pth`` file adds the
checkout's own path) and ``PYTHONPATH`` naming the link and the link's site-packages, from ``/``,
with a fixed environment (``PYTHONHASHSEED=0`` and nothing of the caller's), its bytecode cached
under the slot (``PYTHONPYCACHEPREFIX``, filled by a native ``--prepare`` pass first, so no count
includes compiling). Two runs in one checkout give the same counts; two checkouts of one commit
differ by less than 0.1 %. A run holds its slot's lock: one that starts while another holds
``slot0`` (two checkouts testing at once) takes ``slot1``, a string of the same length.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .driver import GROUPS, HIGH, LIMIT, LOW, SLICES, Case

ROOT = Path(__file__).parents[2]
MARKS_C = Path(__file__).with_name("marks.c")
VALGRIND_HINT = ("valgrind is not installed: install it with `apt-get install -y valgrind` (`make test` does, "
                 "as root, through tests/tools/ensure_system.py) and run again")
GCC_HINT = ("gcc cannot build the callgrind marks (benchmarks/budget/marks.c): install it with "
            "`apt-get install -y gcc valgrind` (`make test` does, as root) and run again")
CALLGRIND = ["--tool=callgrind", "--instr-atstart=no"]
CHILD_ENV = {"PATH": os.defpath, "PYTHONHASHSEED": "0", "MCP_LOG_LEVEL": "warning"}
SLOTS = 10
_DESC = re.compile(r"^desc: Trigger: Client Request: (\S+)$", re.M)
_TOTALS = re.compile(r"^totals: (\d+)", re.M)


class BudgetError(RuntimeError):
    """The count cannot be made: a tool is missing or a counting process failed."""


@dataclass(frozen=True)
class Count:
    """One case's figures: instructions per request, the reference cycles each left behind, and
    the background tasks stopped before counting."""

    key: str
    per_request: float
    low: int  # instructions of the LOW requests' runs
    high: int  # instructions of the HIGH requests' runs
    cycles_per_request: float
    stopped: tuple[str, ...] = ()


def tools() -> tuple[str, str]:
    """The paths of valgrind and gcc; :class:`BudgetError` with the install command when missing."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise BudgetError(VALGRIND_HINT)
    gcc = shutil.which("gcc")
    if gcc is None:
        raise BudgetError(GCC_HINT)
    return valgrind, gcc


def valgrind_version(valgrind: str) -> str:
    """``valgrind --version`` without its ``valgrind-`` prefix."""
    out = subprocess.run([valgrind, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return out.removeprefix("valgrind-")


def build_marks(gcc: str, workdir: Path) -> Path:
    """Compile :file:`marks.c` into ``workdir``; the shared library's path."""
    out = workdir / "marks.so"
    proc = subprocess.run([gcc, "-O2", "-shared", "-fPIC", "-o", str(out), str(MARKS_C)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BudgetError(f"{GCC_HINT}\n{proc.stderr.strip()}")
    return out


def read_dumps(workdir: Path) -> dict[str, int]:
    """Every labelled callgrind dump in ``workdir``: its label (``<case>/low``) -> instructions."""
    out: dict[str, int] = {}
    for path in sorted(workdir.glob("callgrind.*.out.*")):
        text = path.read_text()
        label, totals = _DESC.search(text), _TOTALS.search(text)
        if label and totals:
            out[label.group(1)] = int(totals.group(1))
    return out


def interpreter() -> Path:
    """The interpreter of this checkout's virtualenv, relative to the checkout."""
    exe = Path(sys.executable)
    if not exe.is_relative_to(ROOT):
        raise BudgetError(f"the budget runs in the checkout's own virtualenv ({ROOT / '.venv'}), not {exe}: "
                          "run `make install`, then `.venv/bin/python -m benchmarks.budget`")
    return exe.relative_to(ROOT)


@contextlib.contextmanager
def slot() -> Iterator[Path]:
    """The first free directory of ``/tmp/mcpcore-budget-<uid>/slot<n>`` (not ``$TMPDIR``: the
    child's paths must be the same strings everywhere), locked until the run ends."""
    base = Path(f"/tmp/mcpcore-budget-{os.getuid()}")
    for n in range(SLOTS):
        path = base / f"slot{n}"
        path.mkdir(parents=True, exist_ok=True)
        with open(path / "lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            yield path
            return
    raise BudgetError(f"all {SLOTS} slots of {base} are in use by other budget runs: wait for one to end")


def site_packages() -> Path:
    """The virtualenv's site-packages, relative to the checkout."""
    path = Path(sysconfig.get_path("purelib"))
    if not path.is_relative_to(ROOT):
        raise BudgetError(f"the budget runs in the checkout's own virtualenv ({ROOT / '.venv'}), not {sys.prefix}: "
                          "run `make install`, then `.venv/bin/python -m benchmarks.budget`")
    return path.relative_to(ROOT)


def _run_groups(valgrind: str, gcc: str, workdir: Path) -> dict[str, dict[str, Any]]:
    """Start every group at once, wait for all; the JSON each printed, merged."""
    python = interpreter()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    with slot() as fixed:
        link = fixed / "r"
        link.unlink(missing_ok=True)
        link.symlink_to(ROOT, target_is_directory=True)
        marks = build_marks(gcc, fixed)
        env = {**CHILD_ENV, "PYTHONPATH": f"{link}:{link / site_packages()}",
               "PYTHONPYCACHEPREFIX": str(fixed / "pycache")}
        child = [str(link / python), "-S", "-m", "benchmarks.budget.driver"]
        prepare = subprocess.run([*child, "--prepare"], cwd="/", env=env, capture_output=True, text=True)
        if prepare.returncode != 0:
            raise BudgetError(f"the apps do not import:\n{prepare.stderr.strip()}")
        try:
            for name in GROUPS:
                cmd = [valgrind, "-q", *CALLGRIND, f"--callgrind-out-file={workdir / f'callgrind.{name}.out'}",
                       *child, str(marks), name]
                procs[name] = subprocess.Popen(cmd, cwd="/", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            return _results(procs)
        finally:
            for proc in procs.values():  # on a failure or Ctrl-C: the other group is ended by its PID
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


def _results(procs: dict[str, subprocess.Popen[bytes]]) -> dict[str, dict[str, Any]]:
    """Wait for every group; the JSON each printed, merged."""
    merged: dict[str, dict[str, Any]] = {}
    for name, proc in procs.items():
        out, err = proc.communicate()
        if proc.returncode != 0:
            tail = "\n".join(err.decode(errors="replace").strip().splitlines()[-15:])
            raise BudgetError(f"counting group {name!r} failed (exit {proc.returncode}):\n{tail}")
        merged.update(orjson.loads(out.splitlines()[-1]))
    return merged


def count(workdir: Path) -> dict[str, Count]:
    """Instructions per request of every case and of the limit's (``asgi:<request>``), by key.

    Raises:
        BudgetError: valgrind or gcc is missing, or a counting process failed.
    """
    valgrind, gcc = tools()
    workdir.mkdir(parents=True, exist_ok=True)
    extra = _run_groups(valgrind, gcc, workdir)
    dumps = read_dumps(workdir)
    out: dict[str, Count] = {}
    for case in (c for cases in GROUPS.values() for c in cases):
        runs = [f"{case.key}/{run}{i}" for run in ("low", "high") for i in range(SLICES)]
        missing = [r for r in runs if r not in dumps]
        if missing:
            raise BudgetError(f"no callgrind dump for {', '.join(missing)} in {workdir} (found {sorted(dumps)})")
        lo = sum(dumps[f"{case.key}/low{i}"] for i in range(SLICES))
        hi = sum(dumps[f"{case.key}/high{i}"] for i in range(SLICES))
        res = extra[case.key]
        out[case.key] = Count(case.key, (hi - lo) / (HIGH - LOW), lo, hi, res["cycles_per_request"],
                              tuple(res["stopped"]))
    return out


def limit_key(case: Case) -> str:
    """The key of the pure-ASGI count ``case`` is set against."""
    return f"{LIMIT}:{case.request}"
