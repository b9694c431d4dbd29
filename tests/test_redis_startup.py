"""Redis at startup, against real redis-servers: a permanent problem stops startup (``mcpcore run``
exits 2) with one line naming the part, the address and the fix; an unreachable Redis is retried
with a line each time and a line when it answers."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from mcpcore import McpApp, Settings
from mcpcore.errors import ConfigurationError
from mcpcore.redis_startup import preflight
from tests.redis_topologies import redis_alone
from tests.servers import ROOT, free_port

SESSIONS = "the session store (MCP_SESSION_STORE=redis)"


def settings(url: str, **more: str) -> Settings:
    return Settings.from_env({"MCP_SESSION_STORE": "redis", "REDIS_URL": url, **more})


async def refusal(s: Settings) -> str:
    """The line an app's startup stops with."""
    app = McpApp("t", "1", settings=s)
    with pytest.raises(ConfigurationError) as stopped:
        await app.startup()
    assert not app.started
    return str(stopped.value)


@pytest.mark.anyio
async def test_a_refused_or_missing_password_stops_startup(tmp_path: Path) -> None:
    with redis_alone(tmp_path, "--requirepass", "s3cret-pw") as port:
        line = await refusal(settings(f"redis://:wrong-pw@127.0.0.1:{port}/0"))
        assert line == (f"{SESSIONS} cannot use Redis at 127.0.0.1:{port}: the server refused the user name or "
                        "password; put the right ones in REDIS_URL (redis://USER:PASSWORD@host:port/db)")
        assert "wrong-pw" not in line
        line = await refusal(settings(f"redis://127.0.0.1:{port}/0"))
        assert line == (f"{SESSIONS} cannot use Redis at 127.0.0.1:{port}: the server requires a password and "
                        "REDIS_URL gives none; put it in REDIS_URL (redis://:PASSWORD@host:port/db)")
        app = McpApp("t", "1", settings=settings(f"redis://:s3cret-pw@127.0.0.1:{port}/0"))
        await app.startup()  # the right password: no complaint
        await app.shutdown()


@pytest.mark.anyio
async def test_a_database_the_server_lacks_stops_startup(redis_url: str) -> None:
    where = redis_url.split("://", 1)[1].rsplit("/", 1)[0]
    line = await refusal(settings(redis_url.rsplit("/", 1)[0] + "/99"))
    assert line == (f"{SESSIONS} cannot use Redis at {where}: the server has no database 99; use a database number "
                    "it has in REDIS_URL (0 to 15 unless its `databases` is raised)")


@pytest.mark.anyio
async def test_ctx_state_on_a_database_the_server_lacks_stops_startup(redis_url: str) -> None:
    where = redis_url.split("://", 1)[1].rsplit("/", 1)[0]
    s = Settings.from_env({"STORAGE_PROVIDER_TYPE": "redis", "REDIS_URL": redis_url.rsplit("/", 1)[0] + "/42"})
    line = await refusal(s)
    assert line == (f"ctx.state (STORAGE_PROVIDER_TYPE=redis) cannot use Redis at {where}: the server has no database "
                    "42; use a database number it has in REDIS_URL (0 to 15 unless its `databases` is raised)")


@pytest.mark.anyio
async def test_the_wrong_mode_for_the_server_stops_startup(tmp_path: Path, redis_url: str) -> None:
    with redis_alone(tmp_path, "--cluster-enabled", "yes", "--cluster-config-file",
                     str(tmp_path / "nodes.conf")) as port:
        line = await refusal(settings(f"redis://127.0.0.1:{port}/0"))
        assert line == (f"{SESSIONS} cannot use Redis at 127.0.0.1:{port}: the server is a Redis Cluster node and "
                        "MCP_REDIS_MODE=standalone; set MCP_REDIS_MODE=cluster")
    where = redis_url.split("://", 1)[1].rsplit("/", 1)[0]
    line = await refusal(settings(redis_url, MCP_REDIS_MODE="cluster"))
    assert line == (f"{SESSIONS} cannot use Redis at cluster via {where}: the server is not a Redis Cluster node and "
                    "MCP_REDIS_MODE=cluster; set MCP_REDIS_MODE=standalone, or point REDIS_URL at a node of the "
                    "cluster")


@pytest.mark.slow
def test_mcpcore_run_exits_2_with_the_line_before_it_serves(redis_url: str) -> None:
    where = redis_url.split("://", 1)[1].rsplit("/", 1)[0]
    env = {"MCP_SESSION_STORE": "redis", "STORAGE_PROVIDER_TYPE": "redis",
           "REDIS_URL": redis_url.rsplit("/", 1)[0] + "/99"}
    for extra in ([], ["--workers", "2"]):
        proc = subprocess.run([sys.executable, "-m", "mcpcore", "run", "tests.apps.logged:app", "--port",
                               str(free_port()), *extra], cwd=ROOT, env={**__import__("os").environ, **env},
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines()[-1] == (
            f"mcpcore: configuration error: {SESSIONS} and ctx.state (STORAGE_PROVIDER_TYPE=redis) cannot use Redis "
            f"at {where}: the server has no database 99; use a database number it has in REDIS_URL (0 to 15 unless "
            "its `databases` is raised)")
        assert "listening" not in proc.stderr


@pytest.mark.anyio
async def test_an_unreachable_redis_is_retried_with_a_line_each_time_until_it_answers(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    app = McpApp("t", "1", settings=settings(f"redis://127.0.0.1:{port}/0"))
    caplog.set_level(logging.INFO, logger="mcpcore.redis")
    await app.startup()  # serves meanwhile: /readyz says what is missing
    try:
        ready, checks = await app.readiness()
        assert not ready and checks["sessions"] != "ok"
        retry = (f"{SESSIONS} cannot reach Redis at 127.0.0.1:{port} (connection refused); retrying in "
                 "{delay} s (attempt {n}); start Redis there or correct REDIS_URL")
        lines = [r.getMessage() for r in caplog.records if r.name == "mcpcore.redis"]
        assert lines[0] == retry.format(delay="0.5", n=1)
        for _ in range(100):
            if len([r for r in caplog.records if r.name == "mcpcore.redis"]) >= 2:
                break
            await asyncio.sleep(0.05)
        assert [r.getMessage() for r in caplog.records if r.name == "mcpcore.redis"][1] == retry.format(delay="1", n=2)
        with redis_alone(tmp_path, port=port):
            for _ in range(200):
                messages = [r.getMessage() for r in caplog.records if r.name == "mcpcore.redis"]
                if "reached" in messages[-1]:
                    break
                await asyncio.sleep(0.05)
            failed = len(messages) - 1
            assert messages[-1] == f"{SESSIONS} reached Redis at 127.0.0.1:{port} after {failed} failed attempts"
            assert all(m == retry.format(delay=d, n=i + 1)
                       for i, (m, d) in enumerate(zip(messages[:-1], ["0.5", "1", "2", "5", "5"], strict=False)))
            assert [r.levelname for r in caplog.records if r.name == "mcpcore.redis"][-1] == "INFO"
    finally:
        await app.shutdown()


@pytest.mark.anyio
async def test_preflight_names_every_part_and_ignores_a_transient_failure() -> None:
    await preflight(Settings.from_env({}))  # nothing on Redis: nothing to probe
    await preflight(settings(f"redis://127.0.0.1:{free_port()}/0"))  # down: the app's startup retries
