"""The parts of the authorization-server tests: the upstream identity provider (oidc-provider on
Node 22, tests/js/oidc_upstream.mjs, stopped by its PID), an app serving as the authorization
server in front of it (``tests.apps.proxied`` under a real uvicorn), and a scripted browser that
follows the redirects, keeps cookies and fills the consent form as a person would."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import os
import re
import secrets
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
import orjson

from tests.servers import free_port, serve
from tests.tools import ensure_node

SCRIPT = Path(__file__).resolve().parents[1] / "js" / "oidc_upstream.mjs"
SIGNING_KEY = "proxy-signing-key-for-the-tests-0123456789"
UPSTREAM_SCOPES = "openid profile"


@dataclass
class UpstreamProvider:
    """The running provider."""

    issuer: str

    def register_app(self, redirect_uri: str) -> tuple[str, str]:
        """Register the MCP server's upstream app (RFC 7591 at the provider): ``(id, secret)``."""
        r = httpx.post(f"{self.issuer}/reg", json={"redirect_uris": [redirect_uri], "grant_types": [
            "authorization_code", "refresh_token"], "response_types": ["code"]})
        assert r.status_code == 201, r.text
        return r.json()["client_id"], r.json()["client_secret"]

    def set_user(self, sub: str = "alice", tid: str | None = "acme", name: str | None = None,
                 refuse: bool = False) -> None:
        """Who logs in next (or that the login is refused)."""
        q = {"sub": sub, "name": name or sub, "refuse": "1" if refuse else "0", **({"tid": tid} if tid else {})}
        httpx.post(f"{self.issuer}/test/user?{urlencode(q)}").raise_for_status()

    def set_access_ttl(self, seconds: int) -> None:
        httpx.post(f"{self.issuer}/test/ttl?s={seconds}").raise_for_status()

    def stats(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.issuer}/test/stats").json())


@contextlib.contextmanager
def run_upstream() -> Iterator[UpstreamProvider]:
    modules = ensure_node.ensure("identity")
    env = {**ensure_node.env(), "OIDC_MODULES": str(modules)}
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
        yield UpstreamProvider(orjson.loads(line)["issuer"])
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


def proxy_env(upstream: UpstreamProvider, public_url: str, **extra: str) -> dict[str, str]:
    """The environment of an app that is the authorization server at ``public_url``."""
    client_id, secret = upstream.register_app(f"{public_url}/oauth/callback")
    return {"MCP_AUTH_MODE": "proxy", "MCP_PUBLIC_URL": public_url, "MCP_AUTH_SIGNING_KEY": SIGNING_KEY,
            "OAUTH_UPSTREAM_ISSUER_URL": upstream.issuer, "OAUTH_UPSTREAM_CLIENT_ID": client_id,
            "OAUTH_UPSTREAM_CLIENT_SECRET": secret, "OAUTH_UPSTREAM_SCOPES": UPSTREAM_SCOPES,
            "MCP_LOG_LEVEL": "warning", **extra}


@contextlib.contextmanager
def run_proxied(upstream: UpstreamProvider, **extra: str) -> Iterator[str]:
    """``tests.apps.proxied`` as the authorization server in front of ``upstream``; yields its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with serve("tests.apps.proxied:app", env=proxy_env(upstream, base, **extra), port=port):
        yield base


def pkce() -> tuple[str, str]:
    """``(verifier, S256 challenge)``."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@dataclass
class Landing:
    """Where a browser's walk stopped: the client's redirect (``query``) or a page (``page``)."""

    url: str
    status: int
    page: str = ""
    query: dict[str, str] = field(default_factory=dict)


class Browser:
    """A person's browser, scripted: follows redirects (keeping cookies) until it reaches
    ``stop_at`` (the client's redirect URI, not fetched) or a page."""

    def __init__(self, stop_at: str) -> None:
        self.stop_at = stop_at
        self.http = httpx.Client(follow_redirects=False, timeout=20)
        self.visited: list[str] = []

    def close(self) -> None:
        self.http.close()

    def walk(self, url: str, *, method: str = "GET", data: dict[str, str] | None = None,
             headers: dict[str, str] | None = None) -> Landing:
        for _ in range(20):
            if url.startswith(self.stop_at):
                q = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
                return Landing(url, 0, query=q)
            self.visited.append(url)
            r = self.http.request(method, url, data=data, headers=headers)
            method, data, headers = "GET", None, None
            if r.status_code in (301, 302, 303, 307, 308):
                url = urljoin(url, r.headers["location"])
                continue
            return Landing(url, r.status_code, page=r.text)
        raise AssertionError(f"too many redirects: {self.visited[-5:]}")

    @staticmethod
    def form(page: str) -> tuple[str, dict[str, str]]:
        """The consent form's action and hidden fields."""
        action = html.unescape(re.search(r'<form method="post" action="([^"]+)"', page).group(1))  # type: ignore[union-attr]
        fields = {m.group(1): html.unescape(m.group(2))
                  for m in re.finditer(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page)}
        return action, fields

    def decide(self, page: str, decision: str = "allow", **override: str) -> Landing:
        action, fields = self.form(page)
        return self.walk(action, method="POST", data={**fields, "decision": decision, **override})


def authorize_url(base: str, client_id: str, redirect_uri: str, challenge: str, **extra: str) -> str:
    q = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "code_challenge": challenge,
         "code_challenge_method": "S256", "state": "client-state-1", **extra}
    return f"{base}/oauth/authorize?{urlencode({k: v for k, v in q.items() if v is not None})}"


def register(base: str, redirect_uri: str, **extra: Any) -> dict[str, Any]:
    r = httpx.post(f"{base}/oauth/register", json={"redirect_uris": [redirect_uri], "client_name": "Test Desk",
                                                   "token_endpoint_auth_method": "none", **extra})
    assert r.status_code == 201, r.text
    return dict(r.json())


def call_tool(base: str, token: str, name: str, arguments: dict[str, Any] | None = None) -> httpx.Response:
    """A 2026-07-28 ``tools/call`` with ``token``."""
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
         "authorization": f"Bearer {token}", "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
         "mcp-name": name}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}, "name": name, "arguments": arguments or {}}}
    return httpx.post(f"{base}/mcp", json=body, headers=h, timeout=20)
