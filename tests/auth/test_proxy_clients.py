"""Real MCP clients against the authorization server, each from its first 401 to a listed and
called tool: the official Python `mcp` client's OAuth support (dynamic registration, and a client
ID metadata document), the TypeScript SDK 1.x client (tests/js/oauth_client.mjs; a metadata
document, and dynamic registration). The login is the real oidc-provider's, the browser scripted.
The app is built from code here (``McpApp(auth=OAuthProxy(...))``, tests/apps/proxied.py with
``TEST_CIMD_CA``), trusting the CA of the HTTPS server that serves the metadata documents.

Each client runs against two deployments: one instance keeping the state in memory, and two
instances sharing a Redis server behind the scale-out tests' round-robin proxy (every request,
the browser's and the client's, goes to the next instance), where each flow is checked to have
been served by both: the authorization starts on one and its callback lands on the other."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.auth.docserver import DocServer
from tests.auth.upstream import Browser, UpstreamProvider, proxy_env
from tests.scale.harness import cluster, proxy
from tests.servers import free_port, serve, server_log

pytestmark = pytest.mark.slow
REDIRECT = "http://127.0.0.1:9/oauth/callback"


@dataclass
class Deployment:
    """The app as its clients see it (``base``: the public URL) and the instances behind it."""

    base: str
    instances: list[str]

    def mark(self) -> list[int]:
        """Where each instance's log ends now (see :meth:`steps_since`)."""
        return [len(server_log(u)) for u in self.instances]

    def steps_since(self, mark: list[int]) -> dict[str, set[int]]:
        """The authorization-server requests each instance served since ``mark``: step -> instances."""
        steps: dict[str, set[int]] = {}
        for i, (url, start) in enumerate(zip(self.instances, mark, strict=True)):
            for step in re.findall(r"authorization server: (\w+ [^\s\"]+)", server_log(url)[start:]):
                steps.setdefault(step, set()).add(i)
        return steps


@pytest.fixture(scope="module", params=["memory", "redis-pair"])
def server(request: pytest.FixtureRequest, upstream: UpstreamProvider, docs: DocServer,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """``memory``: one instance, its state in memory. ``redis-pair``: two instances sharing a Redis
    server behind a round-robin proxy; the proxy's URL is the public one."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = proxy_env(upstream, base, MCP_AUTH_MODE="none", TEST_CIMD_CA=str(docs.ca), MCP_LOG_LEVEL="info")
    if request.param == "memory":
        with serve("tests.apps.proxied:app", env=env, port=port):
            yield Deployment(base, [base])
        return
    with cluster(tmp_path_factory.mktemp("pair"), "tests.apps.proxied:app", n=2, extra_env=env) as pair, \
            proxy(pair.urls, port=port):
        yield Deployment(base, pair.urls)


@contextlib.contextmanager
def spread_over_instances(server: Deployment) -> Iterator[None]:
    """Check that the flow run inside was served by every instance, the authorization starting on
    one and the upstream's callback landing on another."""
    mark = server.mark()
    yield
    steps = server.steps_since(mark)
    for step in ("GET /oauth/authorize", "GET /oauth/callback", "POST /oauth/consent", "POST /oauth/token"):
        assert step in steps, f"{step} was not served: {steps}"
    if len(server.instances) > 1:
        assert steps["GET /oauth/authorize"] != steps["GET /oauth/callback"], steps
        assert set().union(*steps.values()) == set(range(len(server.instances))), steps


class _Memory:
    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


async def _python_client(server: str, upstream: UpstreamProvider, sub: str, metadata_url: str | None) -> _Memory:
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    upstream.set_user(sub, tid="initech")
    landed: dict[str, str] = {}

    async def redirect_handler(url: str) -> None:
        def walk() -> None:
            browser = Browser(REDIRECT)
            try:
                landing = browser.walk(url)
                if not landing.query:
                    assert "Allow" in landing.page, landing.page[:300]
                    landing = browser.decide(landing.page)
                landed.update(landing.query)
            finally:
                browser.close()

        await anyio.to_thread.run_sync(walk)

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=landed["code"], state=landed.get("state"), iss=landed.get("iss"))

    storage = _Memory()
    auth = OAuthClientProvider(f"{server}/mcp", OAuthClientMetadata(
        redirect_uris=[REDIRECT], client_name="python desk", token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"], response_types=["code"]), storage,
        redirect_handler=redirect_handler, callback_handler=callback_handler, client_metadata_url=metadata_url)
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http, \
            Client(streamable_http_client(f"{server}/mcp", http_client=http), mode="legacy") as client:
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} == {"whoami", "provider_profile"}
        r = await client.call_tool("whoami", {})
        assert r.structured_content is not None
        assert r.structured_content["subject"] == sub and r.structured_content["tenant"] == "initech"
        assert r.structured_content["scopes"] == ["tools:read"]
        r = await client.call_tool("provider_profile", {})
        assert r.structured_content == {"status": 200, "sub": sub}
    assert landed.get("code"), "the client went through the browser flow"
    return storage


@pytest.mark.anyio
async def test_the_python_client_registers_dynamically(server: Deployment, upstream: UpstreamProvider) -> None:
    with spread_over_instances(server):
        storage = await _python_client(server.base, upstream, "grace", None)
    assert storage.client.client_id.startswith("mcp-")


@pytest.mark.anyio
async def test_the_python_client_with_a_metadata_document(server: Deployment, upstream: UpstreamProvider,
                                                          docs: DocServer) -> None:
    url = docs.json("/python-desk.json", {"client_id": f"{docs.base}/python-desk.json", "client_name": "python desk",
                                          "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                                          "grant_types": ["authorization_code", "refresh_token"],
                                          "response_types": ["code"]})
    fetched = docs.hits.get("/python-desk.json", 0)
    with spread_over_instances(server):
        storage = await _python_client(server.base, upstream, "heidi", url)
    assert storage.client.client_id == url
    assert docs.hits["/python-desk.json"] > fetched


def _ts_client(server: str, upstream: UpstreamProvider, sub: str, metadata_url: str | None) -> dict[str, Any]:
    import os
    import signal
    import subprocess
    import tempfile

    import orjson

    from tests.tools import ensure_node

    upstream.set_user(sub, tid="initech")
    env = {**ensure_node.env(), "MCP_CLIENT_MODULES": str(ensure_node.ensure("client"))}
    script = Path(__file__).resolve().parents[1] / "js" / "oauth_client.mjs"
    err = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen([str(ensure_node.node_bin() / "node"), str(script), f"{server}/mcp", REDIRECT,
                             *([metadata_url] if metadata_url else [])], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=err)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        first = proc.stdout.readline()
        if not first:
            proc.wait(10)
            err.seek(0)
            raise AssertionError(f"the TS client failed: {err.read().decode(errors='replace')[-2000:]}")
        browser = Browser(REDIRECT)
        try:
            landing = browser.walk(orjson.loads(first)["authorize"])
            if not landing.query:
                assert "Allow" in landing.page, landing.page[:300]
                landing = browser.decide(landing.page)
        finally:
            browser.close()
        assert landing.query.get("state") == "ts-client-state" and landing.query.get("iss") == server
        proc.stdin.write(orjson.dumps({"code": landing.query["code"]}) + b"\n")
        proc.stdin.flush()
        last = proc.stdout.readline()
        if proc.wait(30) != 0 or not last:
            err.seek(0)
            raise AssertionError(f"the TS client failed: {err.read().decode(errors='replace')[-2000:]}")
        return dict(orjson.loads(last))
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(10)
        proc.stdin.close()
        proc.stdout.close()
        err.close()


def test_the_typescript_client_with_a_metadata_document(server: Deployment, upstream: UpstreamProvider,
                                                        docs: DocServer) -> None:
    url = docs.json("/ts-desk.json", {"client_id": f"{docs.base}/ts-desk.json", "client_name": "TS desk",
                                      "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"})
    fetched = docs.hits.get("/ts-desk.json", 0)
    with spread_over_instances(server):
        out = _ts_client(server.base, upstream, "ivan", url)
    assert out["unauthorized"] is True and out["client_id"] == url
    assert out["tools"] == ["provider_profile", "whoami"]
    assert out["whoami"]["subject"] == "ivan" and out["whoami"]["client"] == url
    assert out["profile"] == {"status": 200, "sub": "ivan"}
    assert docs.hits["/ts-desk.json"] > fetched


def test_the_typescript_client_registers_dynamically(server: Deployment, upstream: UpstreamProvider) -> None:
    with spread_over_instances(server):
        out = _ts_client(server.base, upstream, "judy", None)
    assert out["unauthorized"] is True and out["client_id"].startswith("mcp-")
    assert out["whoami"] == {"subject": "judy", "tenant": "initech", "client": out["client_id"],
                             "scopes": ["tools:read"]}
    assert out["profile"] == {"status": 200, "sub": "judy"}
