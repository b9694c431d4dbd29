"""The command line of ``python -m benchmarks.run``: its flags, defaults and checks."""

from __future__ import annotations

import argparse
import sys

from .harness.catalog import ORDER, SERVERS
from .harness.config import OUT_DIR
from .scenarios.catalog import SCENARIO_BY_ID

DESCRIPTION = "Side-by-side MCP server benchmark (issue 9)."


def _comma_list(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _seed_list(s: str) -> list[int]:
    seeds = [int(x) for x in _comma_list(s)]
    if not seeds or any(x < 0 or x > 4294967295 for x in seeds):
        raise argparse.ArgumentTypeError("hash seeds are integers from 0 to 4294967295")
    return seeds


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The run's settings; ``command_line`` records the command as typed, for the report."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=DESCRIPTION)
    # Five short runs rather than three long ones: on a shared machine the noise comes in bursts
    # that spoil a whole sample, and the median of five shrugs off two of them.
    p.add_argument("--duration", type=int, default=5, help="seconds of load per measured run (default 5)")
    p.add_argument("--repeat", type=int, default=5, help="measured runs per server and scenario; median (default 5)")
    p.add_argument("--warmup", type=int, default=2, help="seconds of wrk load before each measured run (default 2)")
    p.add_argument("--connections", type=int, default=64, help="wrk connections (default 64)")
    p.add_argument("--threads", type=int, default=1, help="wrk threads (default 1; wrk has one core)")
    p.add_argument("--retries", type=int, default=2,
                   help="extra attempts for a sample below the quality bar (default 2; the best attempt is kept)")
    p.add_argument("--quiet-wait", type=float, default=15.0,
                   help="before each sample, wait up to this many seconds for both cores to be idle (default 15)")
    p.add_argument("--max-noise", type=float, default=0.10,
                   help="quality bar: CPU 0 busy with other work, at most (default 0.10)")
    p.add_argument("--min-server-cpu", type=float, default=0.90,
                   help="quality bar: server CPU during the load, at least (default 0.90)")
    p.add_argument("--sessions", type=int, default=10_000, help="idle sessions to open (default 10000)")
    p.add_argument("--session-repeat", type=int, default=3,
                   help="repeats of idle_sessions (default 3: RSS does not suffer the load's noise)")
    p.add_argument("--scenarios", type=_comma_list, default=None,
                   help=f"comma list of {', '.join(SCENARIO_BY_ID)}")
    p.add_argument("--servers", type=_comma_list, default=None,
                   help=f"comma list of {', '.join(ORDER)}")
    p.add_argument("--out", default=str(OUT_DIR), help="output directory (default docs/bench)")
    p.add_argument("--no-chart", action="store_true", help="skip the PNG")
    p.add_argument("--hash-seeds", type=_seed_list, default=[1, 2, 3],
                   help="PYTHONHASHSEED values the instruction counts run under; the median is reported "
                        "(default 1,2,3; string hashing moves a count by up to about 0.5%%)")
    p.add_argument("--smoke", action="store_true",
                   help="a few seconds: mcpcore + bare endpoints, 1 s loads, output in a temp dir")
    args = p.parse_args(argv)
    for sid in args.scenarios or ():
        if sid not in SCENARIO_BY_ID:
            p.error(f"unknown scenario {sid!r}")
    for key in args.servers or ():
        if key not in SERVERS:
            p.error(f"unknown server {key!r}")
    args.command_line = " ".join([".venv/bin/python -m benchmarks.run", *(argv if argv is not None else sys.argv[1:])])
    return args
