"""Starting one server under uvicorn: the single place where its command line is built.

Every server, in every scenario (wrk loads, idle sessions, valgrind counts), starts through
``start_server``; a change to how uvicorn runs (an option, a protocol class) lands in
``uvicorn_command`` and nowhere else.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .catalog import BASE_ENV, Server
from .config import NODE_HINT, NODE_MODULES, ROOT, SERVER_CPU, SERVER_CPUS, SERVERS_DIR, ServerFailed
from .machine import Tools
from .processes import forget, free_port, stop, track


@dataclass
class Running:
    """A started server: its process, port and log file."""

    server: Server
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def log_tail(self, lines: int = 8) -> str:
        """The last lines of the server's output, on one line (for error messages)."""
        with contextlib.suppress(OSError):
            text = self.log_path.read_text(errors="replace").strip().splitlines()
            return " | ".join(text[-lines:])
        return ""


def uvicorn_command(server: Server, python: Path, port: int) -> list[str]:
    """uvicorn serving ``server``'s app on ``port``, with the settings every server shares."""
    return [str(python), "-m", "uvicorn",
            "--app-dir", str(SERVERS_DIR), f"{server.module}:app", "--host", "127.0.0.1", "--port", str(port),
            "--loop", "uvloop", "--http", server.http, "--no-access-log", "--log-level", "warning",
            "--timeout-graceful-shutdown", "3", *(["--workers", str(server.workers)] if server.workers > 1 else [])]


def server_command(server: Server, python: dict[str, Path], port: int, tools: Tools) -> list[str]:
    """The command serving ``server`` on ``port``: uvicorn for a Python app, node for the TS SDK's.

    Raises:
        ServerFailed: the server runs on Node and Node 22 or the TS SDK is not installed.
    """
    if server.runtime == "node":
        if tools.node is None or not NODE_MODULES.is_dir():
            raise ServerFailed(NODE_HINT)
        return [tools.node, str(SERVERS_DIR / server.module)]
    return uvicorn_command(server, python["peers" if server.peers else "main"], port)


def server_env(server: Server, env_extra: dict[str, str]) -> dict[str, str]:
    """The server's environment: ours without any MCP_/BENCH_/REDIS_URL, then its own settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "BENCH_", "REDIS_URL"))}
    env.update(BASE_ENV.get(server.key, {}))
    env.update(env_extra)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if server.runtime == "node":
        env["NODE_PATH"] = str(NODE_MODULES)
        env["NODE_ENV"] = "production"
    return env


def start_server(server: Server, env_extra: dict[str, str], tools: Tools, workdir: Path,
                 python: dict[str, Path], timeout: float = 60.0, wrapper: list[str] | None = None) -> Running:
    """Start ``server`` under uvicorn, pinned (or under ``wrapper`` instead, unpinned), and wait
    until it listens."""
    port = free_port()
    env = server_env(server, env_extra)
    env["PORT"] = str(port)
    log_path = workdir / f"{server.key}-{port}.log"
    cpus = SERVER_CPUS if server.workers > 1 else SERVER_CPU
    cmd = [*(tools.server_prefix(cpus) if wrapper is None else wrapper), *server_command(server, python, port, tools)]
    with open(log_path, "wb") as logf:
        proc = subprocess.Popen(cmd, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stdout=logf,
                                stderr=subprocess.STDOUT)
    track(proc)
    running = Running(server, proc, port, log_path)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            forget(proc)
            raise ServerFailed(f"server exited with code {proc.returncode} at startup: {running.log_tail()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return running
        if time.monotonic() > deadline:
            stop(proc)
            raise ServerFailed(f"server did not listen within {timeout:.0f} s: {running.log_tail()}")
        time.sleep(0.03)
