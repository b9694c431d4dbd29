"""Real servers for tests: the example app under uvicorn on a free loopback port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
PROCESSES: dict[str, subprocess.Popen[bytes]] = {}
"""The process serving each URL :func:`run_server` yielded (for tests that kill instances)."""
LOGS: dict[str, Any] = {}
"""The log file (stderr) of the server at each base URL :func:`serve` yielded; see :func:`server_log`."""


def server_log(url: str) -> str:
    """What the server serving ``url`` (its base URL or any URL below it) wrote to stderr so far."""
    base = str(httpx.URL(url).copy_with(path="/", query=None)).rstrip("/")
    fd = LOGS[base].fileno()
    return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")  # the server's offset stays


def libfaketime() -> str:
    """The path of libfaketime (Debian's faketime package, which ``make test`` installs) for a
    server process whose wall clock a test moves; fails with the install hint when it is missing."""
    import glob

    import pytest

    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    if not found:
        pytest.fail("libfaketime is not installed: apt-get install -y faketime (make test installs it)")
    return found[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(target: str, env: dict[str, str] | None = None, port: int | None = None,
          health_path: str = "/healthz", uvicorn: list[str] | None = None, startup_timeout: float = 20.0,
          ) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Serve any ASGI app ``target`` with ``mcpcore run`` (or, given ``uvicorn``, with plain
    ``uvicorn`` and those options) on a free loopback port until ``health_path`` answers 200;
    yields the base URL and the process, stopped by PID at the end (SIGTERM, then SIGKILL after
    10 s). Its stderr is kept: :func:`server_log`. ``startup_timeout``: seconds it may take to answer."""
    port = port or free_port()
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    command = [sys.executable, "-m", "mcpcore", "run", target] if uvicorn is None else \
        [sys.executable, "-m", "uvicorn", target, *uvicorn]
    proc = subprocess.Popen([*command, "--host", "127.0.0.1", "--port", str(port)], cwd=ROOT, env=full_env,
                            stdout=log if uvicorn is not None else subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"
    LOGS[base] = log
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                log.seek(0)
                err = log.read().decode(errors="replace")
                raise RuntimeError(f"{target} exited with {proc.returncode}: {err[-2000:]}")
            try:
                if httpx.get(base + health_path, timeout=0.5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{target} did not start within {startup_timeout:g} s")
            time.sleep(0.05)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        LOGS.pop(base, None)
        log.close()


@contextlib.contextmanager
def run_server(target: str = "examples.everything:app", env: dict[str, str] | None = None,
               port: int | None = None) -> Iterator[str]:
    """Serve ``target`` (an McpApp on ``/mcp``) with ``mcpcore run``; yields the MCP URL."""
    with serve(target, env, port) as (base, proc):
        url = f"{base}/mcp"
        PROCESSES[url] = proc
        try:
            yield url
        finally:
            PROCESSES.pop(url, None)
