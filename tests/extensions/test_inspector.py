"""The MCP Inspector 2.12 CLI against the example server, in both protocol eras: its SEP-2640
skill verification and its MCP Apps probe."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import run_server
from tests.tools import ensure_node

pytestmark = pytest.mark.slow

ERAS = ("legacy", "modern")


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with run_server() as url:
        yield url


def inspector(url: str, era: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    launcher = ensure_node.ensure("inspector") / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / \
        "build" / "index.js"
    env = {**ensure_node.env(), "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json")}
    return subprocess.run([str(ensure_node.node_bin() / "node"), str(launcher), "--cli", url, "--protocol-era", era,
                           *args], cwd=home, env=env, capture_output=True, text=True, timeout=120)


def _json_lines(out: str) -> list[dict[str, object]]:
    return [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]


@pytest.mark.parametrize("era", ERAS)
def test_skills_list_verify(server_url: str, era: str, tmp_path: Path) -> None:
    proc = inspector(server_url, era, tmp_path, "--method", "skills/list", "--verify", "--require-digests")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    reports = _json_lines(proc.stdout)
    assert [r["uri"] for r in reports] == ["skill://catalog-lookup/SKILL.md"]
    report = reports[0]
    assert report["ok"] is True and report["outcome"] == "verified" and report["conformance"] == []
    files = report["files"]
    assert isinstance(files, list) and len(files) == 2 and all(f["status"] == "verified" for f in files)


@pytest.mark.parametrize("era", ERAS)
def test_app_info_reports_the_example_app(server_url: str, era: str, tmp_path: Path) -> None:
    proc = inspector(server_url, era, tmp_path, "--method", "tools/list", "--app-info", "--advertise-apps")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    apps = [line for line in _json_lines(proc.stdout) if line.get("hasApp")]
    assert apps == [{"hasApp": True, "toolName": "show_catalog", "resourceUri": "ui://show_catalog/view.html",
                     "csp": {"resourceDomains": ["https://fonts.googleapis.com", "https://fonts.gstatic.com"]},
                     "prefersBorder": True, "resourceMimeType": "text/html;profile=mcp-app"}]


@pytest.mark.parametrize("era", ERAS)
def test_a_client_without_apps_gets_the_text_fallback(server_url: str, era: str, tmp_path: Path) -> None:
    call = ("--method", "tools/call", "--tool-name", "show_catalog", "--tool-arg", "color=red", "--format", "json")
    plain = json.loads(inspector(server_url, era, tmp_path, *call).stdout)["result"]
    assert plain["content"][0] == {"type": "text", "text": "Catalog: red widget, red gadget"}
    apps = json.loads(inspector(server_url, era, tmp_path, *call, "--advertise-apps").stdout)["result"]
    assert [b["text"] for b in apps["content"]] == ['{"items":["red widget","red gadget"]}']
    assert plain["structuredContent"] == apps["structuredContent"] == {"items": ["red widget", "red gadget"]}
