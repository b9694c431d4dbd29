"""The official TypeScript clients (@modelcontextprotocol/client 2.x and @modelcontextprotocol/sdk
1.x, Node 22) against the example server: 2025 handshake and 2026-07-28 with automatic
input_required rounds (both for ctx.request_input and for awaited asks) and a listen stream."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import run_server
from tests.tools import ensure_node

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "js" / "ts_client.mjs"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with run_server() as url:
        yield url


def _drive(url: str, era: str, sdk: str = "sdk2") -> dict[str, object]:
    modules = ensure_node.ensure("client")
    env = {**ensure_node.env(), "MCP_CLIENT_MODULES": str(modules)}
    proc = subprocess.run([str(ensure_node.node_bin() / "node"), str(SCRIPT), url, era, sdk], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_typescript_client(server_url: str, era: str) -> None:
    out = _drive(server_url, era)
    assert out["search"] == {"items": ["red widget", "red gadget"], "effectiveQuery": "red", "totalCount": 2}
    assert '"id":"5"' in str(out["resource"])
    assert out["prompt"] == "Prompt with arguments: arg1='a', arg2='b'"
    assert out["multi"] == "Paris Ada (1 roots)"
    assert [(e["reason"], e["code"]) for e in out["fetchErrors"]] == [("no_match", -32001), ("queue_full", -32003)]
    assert out["rounds"] == "Ada likes Ada"
    assert out["awaited"] == "Paris Ada (1 roots)"  # await ctx.elicit / sample / list_roots
    if era == "modern":
        assert out["era"] == "modern" and out["version"] == "2026-07-28"
        assert out["honored"] == {"toolsListChanged": True}
        assert out["listChanged"] is True
    else:
        assert out["version"] == "2025-11-25"


def test_typescript_sdk1_client_answers_awaited_asks_on_a_2025_session_and_in_a_task(server_url: str) -> None:
    out = _drive(server_url, "legacy", "sdk1")
    assert out["version"] == "2025-11-25"
    assert out["multi"] == "Paris Ada (1 roots)" and out["rounds"] == "Ada likes Ada"
    assert out["awaited"] == "Paris Ada (1 roots)"
    # Inside a task: the SDK's experimental task stream; each await is a round of the task.
    task = out["task"]
    assert isinstance(task, list) and task[0] == "taskCreated:working" and task[-1] == "Booked for Ada"
    assert "taskStatus:input_required" in task
