"""``mcpcore dev module:app``: it prints the URL and the Inspector command, serves, restarts when
the code changes, logs readable lines, and stops cleanly on Ctrl+C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from mcpcore.client import Client
from tests.servers import free_port

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
ENV = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}

APP = '''
from mcpcore import McpApp, Settings, tool


@tool
def hello() -> str:
    """Say hello."""
    return "hello"


app = McpApp("devapp", "1.0.0", tools=[hello], settings=Settings.from_env({{}}))
{more}
'''

MORE = '''

@tool
def goodbye() -> str:
    """Say goodbye."""
    return "goodbye"


app.include(goodbye)
'''


async def _tools(url: str) -> set[str]:
    async with Client(url) as client:
        return {t["name"] for t in await client.list_tools()}


async def test_dev_serves_reloads_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    (tmp_path / "devapp.py").write_text(APP.format(more=""), encoding="utf-8")
    port = free_port()
    err = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "mcpcore", "dev", "devapp:app", "--port", str(port),
                             "--log-format", "readable"], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                            stderr=err, text=True)
    try:
        assert proc.stdout is not None
        url = f"http://127.0.0.1:{port}/mcp"
        head = [proc.stdout.readline().rstrip() for _ in range(3)]
        assert head[0] == f"mcpcore dev: serving devapp:app at {url}, restarting on changes under {tmp_path}"
        assert head[1] == ("Inspector: npx @modelcontextprotocol/inspector --transport http "
                           f"--server-url {url} --protocol-era auto")
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the dev server did not start"
            time.sleep(0.2)
        assert await _tools(url) == {"hello"}
        (tmp_path / "devapp.py").write_text(APP.format(more=MORE), encoding="utf-8")
        deadline = time.monotonic() + 30
        while True:  # the reloader restarts the server with the new code
            try:
                if await _tools(url) == {"hello", "goodbye"}:
                    break
            except Exception:  # restarting
                pass
            assert time.monotonic() < deadline, "the dev server did not reload"
            time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        err.seek(0)
        logs = err.read().decode(errors="replace")
        assert "Traceback" not in logs and "KeyboardInterrupt" not in logs
        assert re.search(r"^\d\d:\d\d:\d\d INFO +mcpcore\.app  mcpcore \S+ serving devapp 1\.0\.0", logs, re.M), logs
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        err.close()


def test_dev_refuses_what_cannot_start(tmp_path: Path) -> None:
    for args, expected in ((["nowhere:app"], "no module named 'nowhere'"),
                           (["x:app", "--port", "70000"], "--port 70000: give a port between 1 and 65535")):
        proc = subprocess.run([sys.executable, "-m", "mcpcore", "dev", *args], cwd=tmp_path, env=ENV,
                              capture_output=True, text=True, timeout=60)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and expected in lines[0], proc.stderr
