"""This machine: the tools the harness needs, CPU pinning, versions, the measured source, and
the peer servers' virtualenv."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .config import (
    LOAD_CPU,
    NICE,
    NODE_MODULES,
    PEERS_MARKER,
    PEERS_PY,
    PEERS_REQUIREMENTS,
    PEERS_VENV,
    ROOT,
    SERVER_CPU,
    TASKSET_HINT,
    WRK_HINT,
    BenchError,
    log,
)

# The CPUs this process may use as started (before find_tools moves it to CPU 1).
_AFFINITY: set[int] | None = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


@dataclass
class Tools:
    """The programs found on this machine and how servers and loads are pinned."""

    wrk: str
    taskset: str | None
    redis: str | None
    pinned: bool
    redis_cli: str | None = None  # joins the Cluster's nodes (redis-cli --cluster create)
    nice: list[str] = field(default_factory=list)  # e.g. ["nice", "-n", "-5"] when allowed
    node: str | None = None  # Node 22, for the TS SDK server (None: not installed)

    def server_prefix(self, cpus: str = SERVER_CPU) -> list[str]:
        return [*self.nice, *([self.taskset, "-c", cpus] if self.pinned and self.taskset else [])]

    def load_prefix(self) -> list[str]:
        return [*self.nice, *([self.taskset, "-c", LOAD_CPU] if self.pinned and self.taskset else [])]


def find_tools() -> Tools:
    """Find wrk, taskset, redis-server, redis-cli and nice; move this process to the load CPU when pinned.

    Raises:
        BenchError: wrk is missing (the message carries the install command).
    """
    wrk = shutil.which("wrk")
    if wrk is None:
        raise BenchError(WRK_HINT)
    taskset = shutil.which("taskset")
    if taskset is None:
        log("WARNING: " + TASKSET_HINT)
    pinned = taskset is not None and _AFFINITY is not None and {0, 1} <= _AFFINITY
    if taskset is not None and not pinned:
        log("WARNING: fewer than two usable CPUs (0 and 1); running UNPINNED.")
    if pinned:
        # The harness itself stays off the server's core.
        os.sched_setaffinity(0, {int(LOAD_CPU)})
    # On a shared machine, a slightly raised priority (root only) keeps the server and wrk from
    # being starved by background work on their cores; what is left is caught by the quality bar.
    nice_bin = shutil.which("nice")
    nice = [nice_bin, "-n", str(NICE)] if nice_bin and hasattr(os, "geteuid") and os.geteuid() == 0 else []
    return Tools(wrk=wrk, taskset=taskset, redis=shutil.which("redis-server"), pinned=pinned, nice=nice,
                 redis_cli=shutil.which("redis-cli"), node=find_node())


def find_node() -> str | None:
    """Node 22 as tests/tools/ensure_node.py installs it under .cache/node, else ``node`` on PATH
    when it is version 22 or later (None: neither)."""
    for candidate in sorted((ROOT / ".cache" / "node" / "node22" / "node_modules").glob("node-linux-*/bin/node")):
        return str(candidate)
    found = shutil.which("node")
    major = (tool_version([found, "--version"]) or "").lstrip("v").split(".")[0] if found else ""
    return found if major.isdigit() and int(major) >= 22 else None


def peers_venv_ready() -> bool:
    """benchmarks/.venv-peers exists with today's requirements."""
    return PEERS_PY.exists() and PEERS_MARKER.exists() and PEERS_MARKER.read_text() == "\n".join(PEERS_REQUIREMENTS)


def ensure_peers_venv() -> Path:
    """Create benchmarks/.venv-peers (mcp, fastmcp, matplotlib, redis) on first use."""
    want = "\n".join(PEERS_REQUIREMENTS)
    if peers_venv_ready():
        return PEERS_PY
    log(f"creating the peer servers' virtualenv {PEERS_VENV.relative_to(ROOT)} (one time) ...")
    if not PEERS_PY.exists():
        base = shutil.which("python3") or sys.executable
        subprocess.run([base, "-m", "venv", str(PEERS_VENV)], check=True)
    subprocess.run([str(PEERS_PY), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([str(PEERS_PY), "-m", "pip", "install", "--quiet", *PEERS_REQUIREMENTS], check=True)
    PEERS_MARKER.write_text(want)
    return PEERS_PY


def source_state() -> dict[str, Any]:
    """Which mcpcore source was measured: the commit and whether mcpcore/ had local edits."""
    def git(*args: str) -> str | None:  # read-only: --no-optional-locks keeps status/diff off the index
        try:
            out = subprocess.run(["git", "--no-optional-locks", *args], cwd=ROOT, capture_output=True, text=True,
                                 timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    dirty = (git("status", "--porcelain", "--", "mcpcore") or "") + (git("diff", "HEAD", "--", "mcpcore") or "")
    return {"commit": git("rev-parse", "--short", "HEAD"), "mcpcore_uncommitted_changes": bool(dirty),
            "mcpcore_diff_sha256": hashlib.sha256(dirty.encode()).hexdigest()[:12] if dirty else None}


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (/proc/loadavg): how busy a shared machine was."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return None


def machine_info() -> dict[str, Any]:
    """CPU count and model, kernel, memory and Python of this machine."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    return {"nproc": os.cpu_count(), "cpu_model": model, "kernel": platform.release(), "mem_gb": mem,
            "python": platform.python_version()}


def tool_version(cmd: list[str]) -> str | None:
    """The first line a program prints about its version (None when it cannot run)."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0].strip() if text else None


_VERSIONS_SNIPPET = """
import importlib.metadata as m, json, sys
out = {"python": sys.version.split()[0]}
for name in sys.argv[1:]:
    try:
        out[name] = m.version(name)
    except m.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
"""


def python_versions(python: Path | str, names: list[str]) -> dict[str, Any]:
    """The installed versions of ``names`` in the environment of ``python``."""
    try:
        out = subprocess.run([str(python), "-c", _VERSIONS_SNIPPET, *names], capture_output=True, text=True,
                             timeout=60)
        return dict(orjson.loads(out.stdout))
    except Exception as exc:  # reported, never fatal
        return {"error": str(exc)}


def versions(python: dict[str, Path], tools: Tools) -> dict[str, Any]:
    """Everything measured, by version: the project's stack, the peers, wrk and redis-server."""
    out: dict[str, Any] = {"mcpcore": None}
    out.update({k: val for k, val in python_versions(python["main"], [
        "mcpcore", "starlette", "uvicorn", "uvloop", "httptools", "orjson", "pydantic"]).items() if k != "python"})
    if "peers" in python:
        pv = python_versions(python["peers"], ["mcp", "fastmcp"])
        out.update({k: val for k, val in pv.items() if k != "python"})
    out["wrk"] = tool_version([tools.wrk, "-v"])
    if tools.node:
        out["node"] = tool_version([tools.node, "--version"])
        with contextlib.suppress(OSError, ValueError, KeyError):
            sdk = orjson.loads((NODE_MODULES / "@modelcontextprotocol" / "sdk" / "package.json").read_bytes())
            out["@modelcontextprotocol/sdk"] = sdk["version"]
    if tools.redis:
        out["redis-server"] = tool_version([tools.redis, "--version"])
    return out
