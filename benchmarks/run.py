"""Side-by-side MCP server benchmark (issue 9).

    .venv/bin/python -m benchmarks.run                 # full run (make bench)
    .venv/bin/python -m benchmarks.run --smoke         # a few seconds, mcpcore + bare endpoints
    .venv/bin/python -m benchmarks.run --duration 5 --repeat 3 --scenarios call_2026,call_2025

Every server runs alone under uvicorn (uvloop, httptools, one worker, access log off, log level
warning) pinned to CPU 0; wrk (and redis-server, and this harness) run on CPU 1. Each
(scenario, server) pair is measured ``--repeat`` times, servers interleaved round-robin and
restarted for every repeat so slow drift on a shared machine hits all of them alike; the median
is reported. See benchmarks/README.md.

This module is the entry point only: the flags are in ``benchmarks.options``, the run in
``benchmarks.suite``, the machinery in ``benchmarks.harness`` and the scenarios in
``benchmarks.scenarios``.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from .harness.config import OUT_DIR, BenchError
from .harness.processes import stop_all
from .options import parse_args
from .suite import run, smoke

__all__ = ["BenchError", "main", "smoke"]


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark as the command line asks; the process's exit code."""
    args = parse_args(argv)
    # Stop cleanly (servers, wrk and redis-server ended by PID) on Ctrl-C and on SIGTERM, also
    # when started in the background, where the shell leaves SIGINT ignored.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.smoke:
            return smoke(None if args.out == str(OUT_DIR) else args.out)
        _, failures = run(args)
        return 1 if failures else 0
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        stop_all()


if __name__ == "__main__":
    sys.exit(main())
