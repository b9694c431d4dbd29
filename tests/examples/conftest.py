"""Fixtures for the example servers: a uvicorn launcher for host apps, and the hermetic OAuth issuer."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests.auth.issuer import Issuer, make_keys, serve
from tests.servers import serve as serve_app


@contextlib.contextmanager
def run_uvicorn(target: str, health_path: str = "/health", env: dict[str, str] | None = None) -> Iterator[str]:
    """Serve any ASGI app (``module:attribute``, here a host app with mcpcore mounted) with
    ``mcpcore run`` on a free port; yields the base URL. Stopped by PID (SIGTERM, then SIGKILL)."""
    with serve_app(target, env, health_path=health_path) as (base, _proc):
        yield base


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    """A loopback OAuth issuer (tests/auth/issuer.py) publishing its RSA, EC and PS keys."""
    with serve(Issuer(keys=make_keys())) as running:
        running.reset()
        yield running
