"""Install the Debian packages the suite drives (redis-server, redis-cli, chromium, wrk, valgrind, gcc,
faketime) when missing.

redis-server also runs the sentinels (``redis-server <conf> --sentinel``) and redis-cli joins the
test Cluster (``redis-cli --cluster create``). gcc compiles the instruction budget's callgrind
marks (benchmarks/budget/marks.c) against valgrind's header.

Runs apt-get only as root; otherwise prints the command to run. The tests that need a missing
tool then fail with the same hint (none of them skips).

    python -m tests.tools.ensure_system
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

PACKAGES = {"redis-server": "redis-server", "redis-cli": "redis-tools", "chromium": "chromium", "wrk": "wrk",
            "valgrind": "valgrind", "gcc": "gcc", "faketime": "faketime"}


def main() -> int:
    missing = [pkg for exe, pkg in PACKAGES.items() if shutil.which(exe) is None]
    if not missing:
        return 0
    command = ["apt-get", "install", "-y", "-q", *missing]
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        print(f"ensure_system: missing {' '.join(missing)}; install with: sudo {' '.join(command)}", file=sys.stderr)
        return 0
    print(f"ensure_system: installing {' '.join(missing)}", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    proc = subprocess.run(command, env=env, stdout=subprocess.DEVNULL)
    if proc.returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL)
        proc = subprocess.run(command, env=env, stdout=subprocess.DEVNULL)
    if proc.returncode != 0:
        print(f"ensure_system: apt-get failed; install by hand: {' '.join(command)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
