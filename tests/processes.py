"""``mcpcore run`` as a real process whose stderr (JSON log lines) a test reads while it runs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.servers import ROOT, free_port

PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"


class LoggedProcess:
    """A process whose stderr lines are collected (parsed as JSON when they are) by a thread."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def records(self) -> list[dict[str, Any]]:
        """Every line read so far that is a JSON object."""
        out = []
        for line in list(self.lines):
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict):
                out.append(value)
        return out

    def wait_for(self, match: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        """The first record ``match`` accepts, waiting for it at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for record in self.records():
                if match(record):
                    return record
            if self.proc.poll() is not None:
                self._reader.join(5)
                break
            time.sleep(0.05)
        raise AssertionError(f"no matching log line within {timeout} s; stderr:\n" + "\n".join(self.lines[-40:]))

    def close(self) -> None:
        """Wait for the reader to see the end of stderr, then close it."""
        self._reader.join(10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def text(self) -> str:
        return "\n".join(self.lines)


@contextlib.contextmanager
def mcpcore_run(target: str, *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT,
                wait: bool = True, server: str = "mcpcore") -> Iterator[tuple[str, LoggedProcess]]:
    """``python -m mcpcore run target --port <free> *args`` (``server="uvicorn"``: ``python -m
    uvicorn`` instead); yields the base URL and the process once ``/healthz`` answers (``wait``),
    ended by PID (SIGTERM, then SIGKILL) at the end."""
    port = free_port()
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    command = [sys.executable, "-m", "mcpcore", "run"] if server == "mcpcore" else [sys.executable, "-m", server]
    proc = subprocess.Popen([*command, target, "--host", "127.0.0.1", "--port", str(port), *args], cwd=cwd,
                            env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    logged = LoggedProcess(proc)
    base = f"http://127.0.0.1:{port}"
    try:
        if wait:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    raise AssertionError(f"{target} exited with {proc.returncode}:\n{logged.text()[-3000:]}")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise AssertionError(f"{target} did not answer within 60 s:\n{logged.text()[-3000:]}")
                time.sleep(0.1)
        yield base, logged
    finally:
        stop(proc)
        logged.close()


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End ``proc`` by its PID: SIGTERM, then SIGKILL after 15 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def call_tool(base: str, name: str, arguments: dict[str, Any], rid: int = 1) -> httpx.Response:
    """One 2026-07-28 ``tools/call`` on a fresh connection (so several workers share the calls)."""
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": {PV: "2026-07-28", CC: {}}}}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
               "mcp-method": "tools/call", "mcp-name": name}
    with httpx.Client(timeout=10) as client:
        return client.post(base + "/mcp", json=body, headers=headers)
