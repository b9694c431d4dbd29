"""Real MCP clients against the authorization server, each from its first 401 to a listed and
called tool: the official Python `mcp` client's OAuth support (dynamic registration, and a client
ID metadata document), the TypeScript SDK 1.x client (tests/js/oauth_client.mjs; a metadata
document, and dynamic registration). The login is the real oidc-provider's, the browser scripted.
The app is built from code here (``McpApp(auth=OAuthProxy(...))``, tests/apps/proxied.py with
``TEST_CIMD_CA``), trusting the CA of the HTTPS server that serves the metadata documents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.auth.docserver import DocServer, run_docserver
from tests.auth.upstream import Browser, UpstreamProvider, proxy_env, run_upstream
from tests.servers import free_port, serve

pytestmark = pytest.mark.slow
REDIRECT = "http://127.0.0.1:9/oauth/callback"


@pytest.fixture(scope="module")
def upstream() -> Iterator[UpstreamProvider]:
    with run_upstream() as provider:
        yield provider


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocServer]:
    with run_docserver(tmp_path_factory.mktemp("tls")) as server:
        yield server


@pytest.fixture(scope="module")
def server(upstream: UpstreamProvider, docs: DocServer) -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = proxy_env(upstream, base, MCP_AUTH_MODE="none", TEST_CIMD_CA=str(docs.ca))
    with serve("tests.apps.proxied:app", env=env, port=port):
        yield base


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
async def test_the_python_client_registers_dynamically(server: str, upstream: UpstreamProvider) -> None:
    storage = await _python_client(server, upstream, "grace", None)
    assert storage.client.client_id.startswith("mcp-")


@pytest.mark.anyio
async def test_the_python_client_with_a_metadata_document(server: str, upstream: UpstreamProvider,
                                                          docs: DocServer) -> None:
    url = docs.json("/python-desk.json", {"client_id": f"{docs.base}/python-desk.json", "client_name": "python desk",
                                          "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                                          "grant_types": ["authorization_code", "refresh_token"],
                                          "response_types": ["code"]})
    storage = await _python_client(server, upstream, "heidi", url)
    assert storage.client.client_id == url
    assert docs.hits["/python-desk.json"] >= 1




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


def test_the_typescript_client_with_a_metadata_document(server: str, upstream: UpstreamProvider,
                                                        docs: DocServer) -> None:
    url = docs.json("/ts-desk.json", {"client_id": f"{docs.base}/ts-desk.json", "client_name": "TS desk",
                                      "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"})
    out = _ts_client(server, upstream, "ivan", url)
    assert out["unauthorized"] is True and out["client_id"] == url
    assert out["tools"] == ["provider_profile", "whoami"]
    assert out["whoami"]["subject"] == "ivan" and out["whoami"]["client"] == url
    assert out["profile"] == {"status": 200, "sub": "ivan"}


def test_the_typescript_client_registers_dynamically(server: str, upstream: UpstreamProvider) -> None:
    out = _ts_client(server, upstream, "judy", None)
    assert out["unauthorized"] is True and out["client_id"].startswith("mcp-")
    assert out["whoami"] == {"subject": "judy", "tenant": "initech", "client": out["client_id"],
                             "scopes": ["tools:read"]}
