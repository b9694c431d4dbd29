"""``mcpcore run --workers`` and ``--reload``: every process logs JSON lines as a single one does,
and in-memory stores split between workers are warned about or refused."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcpcore import McpApp, Settings
from mcpcore.errors import ConfigurationError
from mcpcore.serving import check_shared_store
from tests.processes import LoggedProcess, call_tool, mcpcore_run
from tests.servers import ROOT

WARNING = ("--workers 2 with MCP_SESSION_STORE=memory: each worker keeps its own sessions, event buffers and tasks, "
           "so a client whose next request reaches another worker gets 404 Session not found; set "
           "MCP_SESSION_STORE=redis and REDIS_URL, or MCP_REQUIRE_SHARED_STORE=true to refuse to start like this")
REFUSAL = ("MCP_REQUIRE_SHARED_STORE=true but MCP_SESSION_STORE=memory: sessions, event buffers and tasks would live "
           "in each process alone; set MCP_SESSION_STORE=redis and REDIS_URL")


def handler_lines(logged: LoggedProcess) -> list[dict[str, Any]]:
    return [r for r in logged.records() if r.get("logger") == "mcpcore.handler" and r.get("msg") == "shouting"]


def assert_json_handler_line(record: dict[str, Any]) -> None:
    assert record["level"] == "info" and record["text"] == "hi" and isinstance(record["pid"], int)
    assert isinstance(record["requestId"], str) and record["requestId"]


@pytest.mark.slow
def test_every_worker_logs_json_lines_with_request_ids() -> None:
    with mcpcore_run("tests.apps.logged:app", "--workers", "2") as (base, logged):
        deadline = time.monotonic() + 60
        n = 0
        while len({r["pid"] for r in handler_lines(logged)}) < 2:
            assert time.monotonic() < deadline, f"calls reached one worker only:\n{logged.text()[-3000:]}"
            n += 1
            reply = call_tool(base, "shout", {"text": "hi"}, n)
            assert reply.status_code == 200 and reply.json()["result"]["content"][0]["text"] == "HI"
            time.sleep(0.02)
        lines = handler_lines(logged)
        for record in lines:
            assert_json_handler_line(record)
        assert len({r["requestId"] for r in lines}) == len(lines)
        workers = {r["pid"] for r in lines}
        serving = {r["pid"] for r in logged.records() if r.get("logger") == "mcpcore.app"
                   and str(r.get("msg", "")).startswith("mcpcore 0.1.0 serving logged")}
        assert workers <= serving and len(serving) == 2
        assert logged.proc.pid not in workers
        warning = logged.wait_for(lambda r: r.get("level") == "warning" and r.get("logger") == "mcpcore.cli")
        assert warning["msg"] == WARNING and warning["setting"] == "MCP_SESSION_STORE"
    assert all(line.startswith("{") for line in logged.lines if line.strip()), logged.text()[-3000:]


@pytest.mark.slow
def test_the_reload_child_logs_json_lines_before_and_after_a_reload(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "apps" / "logged.py", tmp_path / "reloaded.py")
    with mcpcore_run("reloaded:app", "--reload", cwd=tmp_path) as (base, logged):
        assert call_tool(base, "shout", {"text": "hi"}).status_code == 200
        first = logged.wait_for(lambda r: r.get("logger") == "mcpcore.handler")
        assert_json_handler_line(first)
        assert first["pid"] != logged.proc.pid
        source = tmp_path / "reloaded.py"
        source.write_text(source.read_text() + "\n# changed\n")
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, logged.text()[-3000:]
            try:
                reply = call_tool(base, "shout", {"text": "hi"}, 2)
            except Exception:
                reply = None
            lines = handler_lines(logged)
            if reply is not None and reply.status_code == 200 and {r["pid"] for r in lines} - {first["pid"]}:
                break
            time.sleep(0.2)
        for record in lines:
            assert_json_handler_line(record)


@pytest.mark.slow
def test_require_shared_store_refuses_to_start_with_exit_2() -> None:
    with mcpcore_run("tests.apps.logged:app", "--workers", "2", env={"MCP_REQUIRE_SHARED_STORE": "true"},
                     wait=False) as (_, logged):
        assert logged.proc.wait(60) == 2
        logged._reader.join(5)
        assert f"mcpcore: configuration error: {REFUSAL}" in logged.lines


def test_the_check_warns_only_for_several_workers_and_refuses_when_required(caplog: pytest.LogCaptureFixture) -> None:
    memory = Settings.from_env({})
    check_shared_store(memory, 1)
    assert not caplog.records
    check_shared_store(memory, 2)
    assert [r.getMessage() for r in caplog.records] == [WARNING]
    check_shared_store(Settings.from_env({"MCP_SESSION_STORE": "redis", "REDIS_URL": "redis://x"}), 4)
    assert len(caplog.records) == 1
    with pytest.raises(ConfigurationError) as refused:
        check_shared_store(Settings.from_env({"MCP_REQUIRE_SHARED_STORE": "1"}), 1)
    assert str(refused.value) == REFUSAL


@pytest.mark.anyio
async def test_an_app_refuses_to_start_over_http_with_memory_stores_when_required() -> None:
    app = McpApp("t", "1", settings=Settings.from_env({"MCP_REQUIRE_SHARED_STORE": "true"}))
    with pytest.raises(ConfigurationError, match="MCP_REQUIRE_SHARED_STORE=true"):
        await app.startup()
    await app.startup(transport="stdio")  # one process: nothing to share
    await app.shutdown()


@pytest.mark.slow
def test_plain_uvicorn_logs_json_lines_through_the_app_startup() -> None:
    with mcpcore_run("tests.apps.logged:app", server="uvicorn") as (base, logged):
        assert call_tool(base, "shout", {"text": "hi"}).status_code == 200
        assert_json_handler_line(logged.wait_for(lambda r: r.get("logger") == "mcpcore.handler"))


def test_an_application_that_configured_logging_keeps_it() -> None:
    import subprocess

    script = ("import asyncio, logging\n"
              "logging.basicConfig(level=logging.INFO, format='%(levelname)s %(name)s %(message)s')\n"
              "from tests.apps.logged import app\n"
              "asyncio.run(app.startup())\n"
              "logging.getLogger('mcpcore.handler').info('from a handler')\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "INFO mcpcore.handler from a handler" in proc.stderr.splitlines(), proc.stderr
    assert '"from a handler"' not in proc.stderr
