"""The landing page and server card: content, escaping, no secrets, off when mounted, and the
page rendered by a real headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from mcpcore import McpApp, Settings, tool
from mcpcore.testing import McpTestClient

from .conftest import example_app
from .servers import run_server

pytestmark = pytest.mark.anyio
CHROMIUM_HINT = ("the landing-page test needs Debian's chromium (make test installs it as root; "
                 "else run: apt-get install -y chromium)")


async def test_landing_groups_tools_and_offers_snippets() -> None:
    app = example_app(request_state_key="super-secret-key-value-that-must-not-leak", public_url="https://mcp.example.com")
    async with McpTestClient(app, initialize=False) as c:
        r = await c.http.get("http://127.0.0.1:8000/")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in r.headers["content-security-policy"]
        page = r.text
        assert "<h3>Read-only</h3>" in page and "<h3>Destructive</h3>" in page
        read_only = page.split("<h3>Read-only</h3>")[1].split("</ul>")[0]
        destructive = page.split("<h3>Destructive</h3>")[1].split("</ul>")[0]
        assert "<code>search</code>" in read_only and "<code>delete_path</code>" in destructive
        assert "https://mcp.example.com/mcp" in page and "mcpServers" in page
        assert "super-secret" not in page and "/tmp/" not in page
        card = (await c.http.get("http://127.0.0.1:8000/.well-known/mcp.json")).json()
        assert card["name"] == "mcpcore-everything" and card["transports"][0]["url"] == "https://mcp.example.com/mcp"
        assert any(t["name"] == "delete_path" for t in card["tools"]) and card["authentication"]["required"] is False
        assert "super-secret" not in str(card)


async def test_descriptions_are_escaped() -> None:
    @tool(description="Shows <script>alert(1)</script> & friends")
    def xss() -> str:
        return ""

    app = McpApp("t", "1", tools=[xss], settings=Settings.from_env({}))
    async with McpTestClient(app, initialize=False) as c:
        page = (await c.http.get("http://127.0.0.1:8000/")).text
    assert "<script>" not in page and "&lt;script&gt;" in page


async def test_off_when_mounted_unless_enabled() -> None:
    mcp = example_app()
    host = Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=mcp.lifespan)
    async with host.router.lifespan_context(host), McpTestClient(host, url="http://127.0.0.1:8000/mcp/",
                                                                 initialize=False) as c:
        r = await c.http.get("http://127.0.0.1:8000/mcp/.well-known/mcp.json")
        assert r.status_code == 404
    mcp = McpApp("t", "1", settings=Settings.from_env({}), landing=True)
    host = Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=mcp.lifespan)
    async with host.router.lifespan_context(host), McpTestClient(host, url="http://127.0.0.1:8000/mcp/",
                                                                 initialize=False) as c:
        r = await c.http.get("http://127.0.0.1:8000/mcp/.well-known/mcp.json")
        assert r.status_code == 200


@pytest.mark.slow
def test_page_renders_in_headless_chromium(tmp_path: Path) -> None:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail(CHROMIUM_HINT, pytrace=False)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    with run_server() as url:
        base = url.rsplit("/mcp", 1)[0] + "/"
        dom = subprocess.run([exe, *flags, "--dump-dom", base], capture_output=True, text=True, timeout=60).stdout
        shot = tmp_path / "landing.png"
        subprocess.run([exe, *flags, f"--screenshot={shot}", "--window-size=1200,1600", base],
                       capture_output=True, timeout=60)
    assert "<h2 id=\"tools\">Tools</h2>" in dom and "delete_path" in dom and "test_prompt_with_arguments" in dom
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


async def test_card_and_page_list_only_what_an_anonymous_tools_list_shows() -> None:
    from mcpcore import prompt, resource
    from mcpcore.extensions import App

    @tool(description="Open to all.")
    def open_tool() -> str:
        return ""

    @tool(description="The payroll secret-tool-description.", visible_to=["hr:read"],
          app=App(html="<p>payroll</p>"))
    def payroll_tool() -> str:
        return ""

    @tool(description="The acme secret-tool-description.", visible_to=lambda ctx: False)
    def acme_tool() -> str:
        return ""

    @prompt(description="The secret-prompt-description.", visible_to=lambda ctx: False)
    def hidden_prompt() -> str:
        return ""

    @resource("secret://ledger", name="ledger", description="The secret-resource-description.",
              visible_to=["hr:read"])
    def ledger() -> str:
        return ""

    @resource("secret://rows/{id}", name="rows", description="The secret-template-description.",
              visible_to=lambda ctx: False)
    def rows(id: str) -> str:
        return ""

    @resource("pub://doc", name="doc", description="A public document.")
    def doc() -> str:
        return ""

    app = McpApp("t", "1", tools=[open_tool, payroll_tool, acme_tool], prompts=[hidden_prompt],
                 resources=[ledger, rows, doc], settings=Settings.from_env({}))
    async with McpTestClient(app, initialize=False) as c:
        card = (await c.http.get("http://127.0.0.1:8000/.well-known/mcp.json")).json()
        page = (await c.http.get("http://127.0.0.1:8000/")).text
    assert [t["name"] for t in card["tools"]] == ["open_tool"]
    assert [r["uri"] for r in card["resources"]] == ["pub://doc"] and card["prompts"] == []
    for text in (str(card), page):
        assert "secret" not in text and "payroll" not in text and "acme_tool" not in text
    assert "<code>open_tool</code>" in page and "<code>pub://doc</code>" in page
