"""``mcpcore run`` as a developer meets it, run as a process: a wrong target is one line with the
fix (exit 2), Ctrl+C exits cleanly, a misspelled variable is named, a malformed origin refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpcore import ConfigurationError, Settings

SERVER = '''
from mcpcore import McpApp, tool


@tool
def forecast(city: str) -> str:
    """Forecast the weather in a city."""
    return f"sunny in {city}"


def create_app() -> McpApp:
    return McpApp("weather", "1.0.0", tools=[forecast])


app = create_app()
'''


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "needs_more.py").write_text("import json\nimport mcpcore_missing_dependency\n")
    yield tmp_path


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "OAUTH_", "STORAGE_"))}
    return {**env, **extra}


def run(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpcore", "run", *args], cwd=project, input="",
                          env=env or environment(), capture_output=True, text=True, timeout=60)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("mcpcore: configuration error: ")
    return line.removeprefix("mcpcore: configuration error: ")


def test_a_misspelled_module_names_the_closest_one(project: Path) -> None:
    line = one_line_error(run(project, "servr:app"))
    assert line.startswith("'servr:app': no module named 'servr' in the current directory")
    assert "did you mean 'server'?" in line


def test_a_missing_dependency_names_the_module_and_the_line_importing_it(project: Path) -> None:
    line = one_line_error(run(project, "needs_more:app"))
    assert line.startswith("'needs_more:app': importing needs_more needs the module 'mcpcore_missing_dependency', "
                           "which is not installed (needs_more.py line 2)")


def test_a_misspelled_attribute_names_the_app(project: Path) -> None:
    line = one_line_error(run(project, "server:ap"))
    assert line == "'server:ap': server has no attribute 'ap'; did you mean server:app?"


def test_a_tool_is_not_an_app(project: Path) -> None:
    assert one_line_error(run(project, "server:forecast")) == (
        "'server:forecast' is a tool ('forecast'), not an app; point at the app instead: server:app")


def test_a_factory_is_not_an_app(project: Path) -> None:
    line = one_line_error(run(project, "server:create_app"))
    assert line.startswith("'server:create_app' is a function taking (), not an ASGI app")
    assert line.endswith("call it in the module (app = create_app()) and point at that")


def test_a_malformed_origin_list_is_refused(project: Path) -> None:
    line = one_line_error(run(project, "server:app", env=environment(MCP_ALLOWED_ORIGINS="https://ok.example,example.com")))
    assert line == ("MCP_ALLOWED_ORIGINS: 'example.com' has no scheme, so it never equals an Origin header, which "
                    "browsers send as scheme://host[:port]; write each origin as scheme://host[:port], e.g. "
                    "https://example.com")


def test_unknown_variables_are_warned_about_with_the_closest_name(project: Path) -> None:
    proc = run(project, "server:app", "--transport", "stdio",
               env=environment(MCP_SESION_STORE="redis", OAUTH_ISSUER="https://id.example", MCP_LOG_LEVEL="info",
                               MCP_WEATHER_API_KEY="k"))
    assert proc.returncode == 0, proc.stderr
    warnings = {r["variable"]: r["msg"] for r in map(json.loads, proc.stderr.splitlines()) if r.get("variable")}
    assert warnings == {
        "MCP_SESION_STORE": "MCP_SESION_STORE is not an mcpcore setting and is ignored; did you mean "
                            "MCP_SESSION_STORE?",
        "OAUTH_ISSUER": "OAUTH_ISSUER is not an mcpcore setting and is ignored; did you mean OAUTH_ISSUER_URL?",
        "MCP_WEATHER_API_KEY": "MCP_WEATHER_API_KEY is not an mcpcore setting and is ignored; no setting is named like "
                               "it (ignore this if your app reads it)",
    }


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_ctrl_c_exits_cleanly(project: Path, transport: str) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mcpcore", "run", "server:app", "--transport", transport, "--port",
                             "0"], cwd=project, env=environment(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "mcpcore listening on" in line:
                break
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(30) == 0, rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stderr):
            if stream is not None:
                stream.close()
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest


@pytest.mark.parametrize(("value", "problem"), [
    ("example.com", "has no scheme"),
    ("https://*.example.com", "has a wildcard; origins are matched exactly"),
    ("https://example.com/app", "has more than scheme://host[:port]"),
    ("https://user@example.com", "has more than scheme://host[:port]"),
    ("https://example.com:99999", "has an invalid port"),
])
@pytest.mark.parametrize("variable", ["MCP_ALLOWED_ORIGINS", "MCP_CORS_ALLOWED_ORIGINS"])
def test_origins_that_can_never_match_are_refused(variable: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env({variable: f"https://ok.example, {value}"})
    assert str(info.value).startswith(f"{variable}: {value!r} {problem}")


def test_origins_that_can_match_pass_and_overrides_follow_the_same_rule() -> None:
    good = "https://app.example.com, http://localhost:3000, https://app.example.com/, *, null"
    assert Settings.from_env({"MCP_ALLOWED_ORIGINS": good}).allowed_origins == (
        "https://app.example.com", "http://localhost:3000", "https://app.example.com/", "*", "null")
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env({}, cors_allowed_origins=("app.example",))
    assert str(info.value).startswith("cors_allowed_origins= (MCP_CORS_ALLOWED_ORIGINS): 'app.example' has no scheme")


def test_unknown_variables_are_those_no_setting_reads() -> None:
    env = {"MCP_SESION_STORE": "redis", "STORAGE_PROVIDER": "redis", "MCP_LOG_LEVEL": "info", "REDIS_URL": "x",
           "MCPCORE_NODE_CACHE": "/tmp", "MCP_EXAMPLE_SANDBOX": "/tmp"}
    assert Settings.unknown_variables(env) == [("MCP_EXAMPLE_SANDBOX", None), ("MCP_SESION_STORE", "MCP_SESSION_STORE"),
                                               ("STORAGE_PROVIDER", "STORAGE_PROVIDER_TYPE")]


def test_what_can_be_served_and_what_cannot() -> None:
    from starlette.applications import Starlette

    from mcpcore.targets import check_servable

    class Wsgi:
        def __call__(self, environ: dict[str, str], start_response: object) -> list[bytes]:
            return []

    async def asgi(scope: object, receive: object, send: object) -> None:
        return None

    check_servable(Starlette(), "host:app")
    check_servable(asgi, "host:app")
    with pytest.raises(ConfigurationError) as info:
        check_servable(Wsgi(), "host:app")
    assert str(info.value) == ("'host:app' is a Wsgi called with (environ, start_response), not an ASGI app (scope, "
                               "receive, send); point at an McpApp, or an ASGI app that mounts one")
    with pytest.raises(ConfigurationError, match=r"is the class Wsgi, not an app"):
        check_servable(Wsgi, "host:Wsgi")
    with pytest.raises(ConfigurationError, match=r"is a dict, not an ASGI app"):
        check_servable({}, "host:config")
