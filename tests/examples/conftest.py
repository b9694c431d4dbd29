"""Fixtures for the example servers: a uvicorn launcher for host apps, and the hermetic OAuth issuer."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.auth.issuer import Issuer, make_keys, serve
from tests.servers import ROOT, free_port


@contextlib.contextmanager
def run_uvicorn(target: str, health_path: str = "/health", env: dict[str, str] | None = None) -> Iterator[str]:
    """Serve any ASGI app (``module:attribute``, here a host app with mcpcore mounted) with
    ``mcpcore run`` on a free port; yields the base URL. Stopped by PID (SIGTERM, then SIGKILL)."""
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen([sys.executable, "-m", "mcpcore", "run", target, "--host", "127.0.0.1", "--port",
                             str(port)], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                log.seek(0)
                err = log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"{target} exited with {proc.returncode}: {err}")
            try:
                if httpx.get(base + health_path, timeout=0.5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{target} did not start within 20 s")
            time.sleep(0.05)
        yield base
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    """A loopback OAuth issuer (tests/auth/issuer.py) publishing its RSA, EC and PS keys."""
    with serve(Issuer(keys=make_keys())) as running:
        running.reset()
        yield running
