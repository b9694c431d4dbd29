"""examples/multitenant.py under real uvicorn in oauth mode, against the hermetic issuer: two
tenants never see each other's documents, the admin tool needs its scope, no token is a 401."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mcpcore import McpError
from mcpcore.lint import lint_app
from mcpcore.testing import McpTestClient, tool_error
from tests.auth.issuer import AUDIENCE, Issuer
from tests.servers import ROOT, run_server

pytestmark = pytest.mark.anyio

READ_WRITE = "docs:read docs:write"


@pytest.fixture(scope="module")
def url(issuer: Issuer) -> Iterator[str]:
    env = {"OAUTH_ISSUER_URL": issuer.url, "OAUTH_AUDIENCE": AUDIENCE, "MCP_LOG_LEVEL": "warning",
           "MCP_PUBLIC_URL": "https://docs.example.com"}
    with run_server("examples.multitenant:app", env=env) as mcp_url:
        yield mcp_url


def client(url: str, issuer: Issuer, *, era: str = "legacy", **claims: Any) -> McpTestClient:
    """A network client whose bearer token carries ``claims`` (tid, sub, scope, ...)."""
    return McpTestClient(url=url, era=era, headers={"authorization": f"Bearer {issuer.mint(**claims)}"})


@pytest.mark.slow
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_two_tenants_are_isolated(url: str, issuer: Issuer, era: str) -> None:
    plan = f"plan-{era}"
    async with client(url, issuer, era=era, tid="acme", sub="alice", scope=READ_WRITE) as acme, \
            client(url, issuer, era=era, tid="globex", sub="bob", scope=READ_WRITE) as globex:
        await acme.call_tool("save_document", {"doc_id": plan, "title": "Acme plan", "text": "Buy globex."})
        await globex.call_tool("save_document", {"doc_id": plan, "title": "Globex plan", "text": "Resist."})
        await globex.call_tool("save_document", {"doc_id": f"secret-{era}", "title": "Secret", "text": "..."})

        mine = (await acme.call_tool("get_document", {"doc_id": plan}))["structuredContent"]
        theirs = (await globex.call_tool("get_document", {"doc_id": plan}))["structuredContent"]
        assert mine == {"id": plan, "title": "Acme plan", "text": "Buy globex.", "author": "alice"}
        assert theirs["text"] == "Resist." and theirs["author"] == "bob"

        acme_ids = (await acme.call_tool("list_documents", {}))["structuredContent"]["ids"]
        assert plan in acme_ids and f"secret-{era}" not in acme_ids
        missing = await acme.call_tool("get_document", {"doc_id": f"secret-{era}"})
        assert missing["isError"] and tool_error(missing)["data"]["reason"] == "unknown_document"


@pytest.mark.slow
async def test_the_admin_report_needs_its_scope(url: str, issuer: Issuer) -> None:
    async with client(url, issuer, tid="initech", scope=READ_WRITE) as writer:
        await writer.call_tool("save_document", {"doc_id": "memo", "title": "Memo", "text": "TPS reports"})
        with pytest.raises(McpError) as refused:
            await writer.call_tool("tenant_report")
        assert refused.value.http_status == 403  # type: ignore[attr-defined]
        assert refused.value.code == -32005 and refused.value.message == "Insufficient permissions."
    async with client(url, issuer, era="modern", tid="initech", scope="docs:read docs:admin") as admin:
        report = (await admin.call_tool("tenant_report"))["structuredContent"]
        assert report == {"tenant": "initech", "documents": 1, "characters": len("TPS reports")}


@pytest.mark.slow
async def test_no_token_is_401_and_a_token_without_tenant_gets_no_state(url: str, issuer: Issuer) -> None:
    async with McpTestClient(url=url, initialize=False) as anonymous:
        r = await anonymous.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401
        assert 'resource_metadata="https://docs.example.com/.well-known/oauth-protected-resource/mcp"' in \
            r.headers["www-authenticate"]
        base = url.removesuffix("/mcp")
        metadata = (await anonymous.http.get(base + "/.well-known/oauth-protected-resource/mcp")).json()
        assert metadata["authorization_servers"] == [issuer.url]
        assert metadata["scopes_supported"] == ["docs:admin", "docs:read", "docs:write"]
        forged = await anonymous.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                      {**anonymous.headers(), "authorization": f"Bearer {issuer.mint('rogue')}"})
        assert forged.status_code == 401
    async with client(url, issuer, tid=None, scope=READ_WRITE) as tenantless:
        r = await tenantless.call_tool("save_document", {"doc_id": "x", "title": "X", "text": "x"})
        assert r["isError"] and tool_error(r)["data"]["reason"] == "tenant_required"


def test_it_refuses_to_start_without_its_oauth_settings() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OAUTH_", "MCP_"))}
    done = subprocess.run([sys.executable, "-m", "mcpcore", "run", "examples.multitenant:app"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "OAUTH_ISSUER_URL is required when MCP_AUTH_MODE=oauth" in done.stderr


def test_definitions_lint_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAUTH_ISSUER_URL", "https://auth.example.com")
    monkeypatch.setenv("OAUTH_AUDIENCE", "docs-mcp")
    monkeypatch.setenv("MCP_PUBLIC_URL", "https://docs.example.com")
    monkeypatch.delitem(sys.modules, "examples.multitenant", raising=False)
    module = importlib.import_module("examples.multitenant")
    try:
        report = lint_app(module.app)
        assert report.passed, report.text()
    finally:
        sys.modules.pop("examples.multitenant", None)
