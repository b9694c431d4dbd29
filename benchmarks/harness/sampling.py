"""What a sample is judged by: CPU and memory readings from /proc, the wait for quiet cores
before a sample, and the quality bar a sample must meet (``LoadSettings.quality``)."""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from typing import Any

from .config import LOAD_CPU, SERVER_CPU


def proc_status(pid: int, key: str) -> int | None:
    """A ``kB`` value from /proc/<pid>/status (VmRSS, VmHWM), in bytes."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def proc_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of one process, from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process descended from it (uvicorn's workers under its supervisor)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU time of ``pid`` and its live descendants, summed (None when ``pid`` cannot be read)."""
    total = proc_cpu_seconds(pid)
    if total is None:
        return None
    for child in process_tree(pid)[1:]:
        total += proc_cpu_seconds(child) or 0.0
    return total


def tree_status(pid: int, key: str) -> int | None:
    """A ``kB`` value of /proc/<pid>/status summed over ``pid`` and its descendants, in bytes."""
    values = [proc_status(p, key) for p in process_tree(pid)]
    return sum(v for v in values if v) if values and values[0] is not None else None


def cpu_busy_seconds(cpu: str) -> float | None:
    """Busy time of one CPU from /proc/stat (everything but idle and iowait)."""
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith(f"cpu{cpu} "):
                    v = [int(x) for x in line.split()[1:]]
                    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    return None


def wait_quiet(max_wait: float, threshold: float = 0.15, window: float = 0.5) -> float:
    """Wait (up to ``max_wait`` s) until CPUs 0 and 1 are each at most ``threshold`` busy over a
    ``window``; returns the seconds waited. Nothing of ours runs while this samples."""
    if max_wait <= 0:
        return 0.0
    t0 = time.monotonic()
    while True:
        a0, b0 = cpu_busy_seconds(SERVER_CPU), cpu_busy_seconds(LOAD_CPU)
        time.sleep(window)
        a1, b1 = cpu_busy_seconds(SERVER_CPU), cpu_busy_seconds(LOAD_CPU)
        if None in (a0, a1, b0, b1):
            return 0.0
        busy = max((a1 - a0) / window, (b1 - b0) / window)  # type: ignore[operator]
        waited = time.monotonic() - t0
        if busy <= threshold or waited >= max_wait:
            return waited


def children_cpu_seconds() -> float:
    """CPU time of every child process that has exited (wrk, after its run)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@dataclass
class LoadSettings:
    """How one load is driven (wrk's settings) and the bar its sample must meet."""

    duration: int
    warmup: int
    connections: int
    threads: int
    retries: int = 2  # extra attempts for a sample that misses the quality bar
    quiet_wait: float = 15.0  # before each sample, wait up to this long for both cores to go idle
    max_noise: float = 0.10  # CPU 0 busy with anything but the server, at most
    min_server_cpu: float = 0.90  # the server must have kept its core busy, at least

    def quality(self, res: dict[str, Any]) -> str | None:
        """Why a sample does not measure the server alone at saturation (None: it does)."""
        other, cpu = res.get("core0_other"), res.get("server_cpu")
        if other is None or cpu is None:
            return None  # unpinned: nothing to judge by
        if other > self.max_noise:
            return f"CPU 0 shared: {other * 100:.0f}% busy with other work"
        if cpu < self.min_server_cpu:
            return f"server not saturated: {cpu * 100:.0f}% CPU (load generator or CPU 1 starved)"
        return None
