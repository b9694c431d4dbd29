"""A real authorization server for the identity tests: oidc-provider (npm, on the project's
Node 22) started by :func:`run_provider` on a free loopback port, stopped by its PID.

It issues DPoP-bound tokens by client credentials (``dpop-client``), introspects them for
``mcp-rs``, and implements RFC 8693 token exchange for ``mcp-server`` (tests/js/oidc_provider.mjs)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.tools import ensure_node

SCRIPT = Path(__file__).resolve().parents[1] / "js" / "oidc_provider.mjs"
SUBJECT_SECRET = "subject-tokens-are-hs256-with-this-secret"
GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"


@dataclass
class Provider:
    """The running provider: its issuer URL and its endpoints."""

    issuer: str

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def introspection_endpoint(self) -> str:
        return f"{self.issuer}/token/introspection"

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}/jwks"

    def stats(self) -> dict[str, Any]:
        """``{"exchanges", "refused", "ttl"}``: token exchanges asked of it so far."""
        return dict(httpx.get(f"{self.issuer}/test/stats").json())

    def set_exchange_ttl(self, seconds: int) -> None:
        """The lifetime of the tokens it issues by exchange from now on."""
        httpx.post(f"{self.issuer}/test/ttl?s={seconds}")


@contextlib.contextmanager
def run_provider(exchange_ttl: int = 300) -> Iterator[Provider]:
    modules = ensure_node.ensure("identity")
    env = {**ensure_node.env(), "OIDC_MODULES": str(modules), "SUBJECT_SECRET": SUBJECT_SECRET,
           "EXCHANGE_TTL": str(exchange_ttl)}
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    proc = subprocess.Popen([str(ensure_node.node_bin() / "node"), str(SCRIPT)], env=env, stdout=subprocess.PIPE,
                            stderr=log)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            proc.wait(10)
            log.seek(0)
            raise RuntimeError(f"oidc-provider did not start: {log.read().decode(errors='replace')[-2000:]}")
        yield Provider(orjson.loads(line)["issuer"])
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        log.close()
