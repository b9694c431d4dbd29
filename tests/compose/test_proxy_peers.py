"""The proxy against official SDK servers: the Python ``mcp`` 2.3 ``MCPServer`` and a TypeScript
SDK 1.x server, both 2025-era with sessions, mounted beside a child app in one gateway: their
definitions under namespaces, calls, prompts, resources, progress and logs, each caller's backend
session opened once (counted at the backend)."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpcore import McpApp, Settings, tool
from mcpcore.compose import proxy
from mcpcore.testing import McpTestClient
from tests.servers import ROOT, free_port, serve
from tests.tools import ensure_node

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ERAS = ["legacy", "modern"]


@pytest.fixture(scope="module")
def py_sdk() -> Iterator[str]:
    with serve("tests.compose.sdk_backend:app", uvicorn=["--log-level", "warning"]) as (base, _proc):
        yield base


@pytest.fixture(scope="module")
def ts_sdk() -> Iterator[str]:
    modules = ensure_node.ensure("client")
    port = free_port()
    proc = subprocess.Popen([str(ensure_node.node_bin() / "node"), str(ROOT / "tests" / "js" / "sdk_http_server.mjs"),
                             str(port)], env={**ensure_node.env(), "MCP_CLIENT_MODULES": str(modules)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/healthz", timeout=0.5).status_code == 200:
                    break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the TypeScript SDK server did not start"
            time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


def gateway(py: str, ts: str) -> McpApp:
    @tool
    def local_echo(text: str) -> str:
        """Echo the text (a tool of the mounted child)."""
        return text

    app = McpApp("gateway", settings=Settings.from_env({}))
    app.mount(McpApp("local", settings=Settings.from_env({}), tools=[local_echo]), namespace="local")
    app.mount(proxy(py + "/mcp"), namespace="py")  # the SDK speaks 2026-07-28: found by server/discover
    app.mount(proxy(py + "/mcp", era="legacy"), namespace="pyl")  # the same server in its 2025 era
    app.mount(proxy(ts + "/mcp"), namespace="ts")
    return app


def counts(base: str) -> dict[str, int]:
    found: dict[str, int] = httpx.get(base + "/initializes").json()
    return found


@pytest.mark.parametrize("era", ERAS)
async def test_official_sdk_backends_behind_one_gateway(py_sdk: str, ts_sdk: str, era: str) -> None:
    before = {"py": counts(py_sdk)["caller"], "ts": counts(ts_sdk)["caller"]}
    async with McpTestClient(gateway(py_sdk, ts_sdk), era=era, log_level="info") as c:
        names = {t["name"] for t in await c.list_tools()}
        assert {"local_local_echo", "py_echo", "py_slow_echo", "ts_shout"} <= names
        for i in range(20):
            assert (await c.call_tool("py_echo", {"text": f"hi {i}"}))["content"][0]["text"] == f"hi {i}"
            assert (await c.call_tool("ts_shout", {"text": "hi"}))["content"][0]["text"] == "HI"
            assert (await c.call_tool("pyl_echo", {"text": "l"}))["content"][0]["text"] == "l"
        assert (await c.call_tool("local_local_echo", {"text": "x"}))["content"][0]["text"] == "x"
        for ns in ("py", "pyl"):
            seen: list[Any] = []
            c.messages.clear()
            r = await c.call_tool(f"{ns}_slow_echo", {"text": "s"},
                                  on_progress=lambda p, t, m, seen=seen: seen.append((p, t)))
            assert r["content"][0]["text"] == "s" and seen == [(1, 2), (2, 2)], (ns, seen)
            assert any(m.get("method") == "notifications/message" and m["params"]["data"] == "halfway"
                       for m in c.messages), (ns, c.messages)
        got = await c.request("prompts/get", {"name": "ts_farewell", "arguments": {"name": "Ada"}})
        assert got["messages"][0]["content"]["text"] == "Goodbye, Ada"
        got = await c.request("prompts/get", {"name": "py_greet", "arguments": {"name": "Ada"}})
        assert "Hello, Ada" in got["messages"][0]["content"]["text"]
        read = await c.read_resource("py://py/motd")
        assert read["contents"][0]["uri"] == "py://py/motd" and read["contents"][0]["text"] == "be kind"
    # one backend session for this caller on each 2025 backend, however many calls it made (the
    # 2026-07-28 one needs none)
    assert counts(py_sdk)["caller"] - before["py"] == 1
    assert counts(ts_sdk)["caller"] - before["ts"] == 1
