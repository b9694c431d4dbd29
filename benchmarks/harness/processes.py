"""Every process the harness starts is recorded here and ended by its PID, never by name."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess

_STARTED: list[subprocess.Popen[bytes]] = []


def track(proc: subprocess.Popen[bytes]) -> None:
    """Record a process just started, so that ``stop_all`` ends it."""
    _STARTED.append(proc)


def forget(proc: subprocess.Popen[bytes]) -> None:
    """Drop a process that has already exited from the record."""
    if proc in _STARTED:
        _STARTED.remove(proc)


def stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """End one process we started, by its PID: SIGTERM, then SIGKILL."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)
    forget(proc)


def stop_all() -> None:
    """End every process still recorded (on a failure, Ctrl-C or SIGTERM)."""
    for proc in list(_STARTED):
        stop(proc, 5.0)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
