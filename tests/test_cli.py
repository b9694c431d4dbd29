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
