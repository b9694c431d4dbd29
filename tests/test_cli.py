"""``mcpcore run``: what it serves and how it refuses what it cannot."""

from __future__ import annotations

import sys
import types

import pytest

from mcpcore.cli import main


@pytest.fixture
def host_module(monkeypatch: pytest.MonkeyPatch) -> str:
    async def app(scope: object, receive: object, send: object) -> None:  # any ASGI app
        raise AssertionError("not served in this test")

    module = types.ModuleType("cli_host_app")
    module.app = app  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cli_host_app", module)
    return "cli_host_app:app"


def test_stdio_needs_an_mcp_app(host_module: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", host_module, "--transport", "stdio"]) == 2
    assert "stdio serves an McpApp, not a function" in capsys.readouterr().err


def test_a_missing_attribute_is_a_configuration_error(host_module: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "cli_host_app:nothing"]) == 2
    assert "has no attribute 'nothing'" in capsys.readouterr().err


def test_bad_settings_in_the_environment_stop_a_host_app_too(host_module: str, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MCP_HTTP_PORT", "not-a-port")
    assert main(["run", host_module]) == 2
    assert "MCP_HTTP_PORT" in capsys.readouterr().err


def test_the_serving_line_names_the_endpoint_and_the_transport(host_module: str) -> None:
    from mcpcore import McpApp, Settings
    from mcpcore.cli import load_app, serving_line

    app = McpApp("t", "1", settings=Settings.from_env({}))
    assert serving_line(app, "http", "127.0.0.1", 8000) == (
        "mcpcore listening on http://127.0.0.1:8000/mcp (MCP over Streamable HTTP; Ctrl+C to quit)")
    sse = McpApp("t", "1", settings=Settings.from_env({"MCP_HTTP_LEGACY_SSE": "true"}), path="/rpc")
    assert serving_line(sse, "http", "::1", 9000) == (
        "mcpcore listening on http://[::1]:9000/rpc (MCP over Streamable HTTP, and HTTP+SSE (2024-11-05) at "
        "http://[::1]:9000/sse; Ctrl+C to quit)")
    assert serving_line(load_app(host_module), "http", "0.0.0.0", 80).startswith(
        "mcpcore listening on http://0.0.0.0:80 (HTTP; an ASGI app")
    assert serving_line(app, "stdio") == (
        "mcpcore listening on stdio (JSON-RPC lines on stdin and stdout; logs on stderr)")


@pytest.mark.slow
def test_run_logs_one_line_with_the_url_it_really_serves() -> None:
    import json
    import subprocess

    import httpx

    from tests.servers import ROOT

    proc = subprocess.Popen([sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--host", "127.0.0.1",
                             "--port", "0"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the OS picks the port; the line says which
            record = json.loads(line)
            if record.get("logger") == "mcpcore.cli":
                break
        assert record["msg"] == f"mcpcore listening on {record['url']} (MCP over Streamable HTTP; Ctrl+C to quit)"
        assert record["transport"] == "http" and record["url"].startswith("http://127.0.0.1:")
        reply = httpx.post(record["url"], json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            headers={"Accept": "application/json, text/event-stream"}, timeout=10)
        assert reply.status_code == 200 and "mcpcore-everything" in reply.text
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


def test_stdio_says_so_on_stderr_and_keeps_stdout_for_messages() -> None:
    import subprocess

    from tests.servers import ROOT

    proc = subprocess.run([sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio"],
                          cwd=ROOT, input="", capture_output=True, text=True, timeout=60)
    assert proc.stdout == ""
    assert "mcpcore listening on stdio (JSON-RPC lines on stdin and stdout; logs on stderr)" in proc.stderr
