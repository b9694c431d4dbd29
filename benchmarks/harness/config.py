"""Where things are, the fixed parameters of every run, the harness's two errors and its log."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[2]  # not resolved: benchmarks.budget runs the code through a link
BENCH = ROOT / "benchmarks"
HARNESS = BENCH / "harness"
SERVERS_DIR = BENCH / "servers"
PEERS_VENV = BENCH / ".venv-peers"
PEERS_PY = PEERS_VENV / "bin" / "python"
# redis, httpx: the TM-style workload's tools (servers/_tm_tools.py) call Redis and the catalog API.
PEERS_REQUIREMENTS = ["mcp==2.3.0", "fastmcp==4.2.3", "starlette", "uvicorn[standard]", "orjson", "matplotlib",
                      "redis[hiredis]", "httpx"]
PEERS_MARKER = PEERS_VENV / ".bench-requirements"
OUT_DIR = ROOT / "docs" / "bench"

WRK_HINT = "wrk is not installed: install it with `apt-get install -y wrk` (Debian/Ubuntu) and run again."
TASKSET_HINT = "taskset is missing (package util-linux: `apt-get install -y util-linux`); running UNPINNED."
REDIS_HINT = "redis-server is not installed (`apt-get install -y redis-server`)"
REDIS_CLI_HINT = "redis-cli is not installed (`apt-get install -y redis-tools`)"

SERVER_CPU = "0"
LOAD_CPU = "1"
SERVER_CPUS = "0,1"  # a server of several workers: both cores, shared with the load (a 2-core machine has no more)
NODE_MODULES = ROOT / ".cache" / "node" / "client" / "node_modules"  # the TS SDK (python -m tests.tools.ensure_node)
NODE_HINT = ("Node 22 or the TS SDK is missing: `.venv/bin/python -m tests.tools.ensure_node` installs them under "
             ".cache/node")
NICE = -5
TEXT = "hello from the benchmark"
DOC = "mcpcore benchmark document: a short text resource."
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"


class BenchError(RuntimeError):
    """The harness cannot run (missing tool, broken environment)."""


class ServerFailed(Exception):
    """A server did not start, or did not answer a request correctly."""


def log(msg: str) -> None:
    """One line of progress on stdout, flushed at once."""
    print(msg, flush=True)
