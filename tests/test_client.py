"""``mcpcore.client.Client`` against real servers: the example server under uvicorn (both eras),
over stdio (both eras), in process, and a 2025-only server built with the TypeScript SDK 1.x."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpcore import JsonRpcErrorCode, McpError
from mcpcore.client import Client, task_of
from tests.auth.test_http_auth import jwt_app, token
from tests.conftest import example_app
from tests.servers import ROOT, run_server
from tests.tools import ensure_node

pytestmark = pytest.mark.anyio
STDIO = [sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio"]
ERAS = ["legacy", "modern"]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with run_server() as url:
        yield url


def _target(kind: str, url: str) -> dict[str, Any]:
    if kind == "http":
        return {"target": url}
    return {"target": STDIO, "cwd": str(ROOT)}


# -- the era ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["http", "stdio"])
async def test_auto_finds_2026_07_28_and_legacy_can_be_forced(server_url: str, kind: str) -> None:
    async with Client(**_target(kind, server_url)) as client:
        assert client.era == "modern" and client.protocol_version == "2026-07-28"
        assert client.server_info == {"name": "mcpcore-everything", "version": "1.0.0"}
        assert "tools" in client.server_capabilities and client.session_id is None
    async with Client(**_target(kind, server_url), era="legacy") as client:
        assert client.era == "legacy" and client.protocol_version == "2025-11-25"
        assert client.init_result is not None and client.init_result["protocolVersion"] == "2025-11-25"
        assert (client.session_id is not None) is (kind == "http")
        await client.ping()
        session = client.session_id
    if kind == "http":  # the 2025 session is deleted when the client closes
        gone = httpx.post(server_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          headers={"mcp-session-id": str(session), "accept": "application/json, text/event-stream"})
        assert gone.status_code == 404


async def test_a_2025_only_server_is_reached_through_the_fallback() -> None:
    modules = ensure_node.ensure("client")
    command = [str(ensure_node.node_bin() / "node"), str(ROOT / "tests" / "js" / "legacy_server.mjs")]
    async with Client(command, env={"MCP_CLIENT_MODULES": str(modules)}) as client:
        assert client.era == "legacy" and client.server_info == {"name": "legacy-sdk1", "version": "1.0.0"}
        assert [t["name"] for t in await client.list_tools()] == ["echo"]
        assert (await client.call_tool("echo", {"text": "hi"}))["content"][0]["text"] == "echo: hi"
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        assert prompt["messages"][0]["content"]["text"] == "Hello, Ada"


# -- lists, calls, errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("era", ERAS)
async def test_lists_come_back_whole_across_pages(era: str) -> None:
    app = example_app(list_page_size=2)
    async with Client(app, era=era) as client:
        tools = await client.list_tools()
        assert len(tools) == len(app.registry.tools) > 2
        assert len(await client.list_prompts()) == len(app.registry.prompts)
        assert {r["uri"] for r in await client.list_resources()} >= {"test://static-text", "test://watched-resource"}
        assert "test://template/{id}/data" in {t["uriTemplate"] for t in await client.list_resource_templates()}
        completion = await client.complete({"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "arg1", "par")
        assert completion["values"] == ["paris", "park", "party"]
        read = await client.read_resource("test://template/7/data")
        assert '"id":"7"' in read["contents"][0]["text"]


@pytest.mark.parametrize("kind", ["http", "stdio"])
@pytest.mark.parametrize("era", ERAS)
async def test_progress_logs_and_errors(server_url: str, kind: str, era: str) -> None:
    logs: list[dict[str, Any]] = []
    progress: list[tuple[float, float | None, str | None]] = []

    def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with Client(**_target(kind, server_url), era=era, on_log=logs.append, log_level="info") as client:
        await client.call_tool("test_tool_with_progress", on_progress=on_progress)
        assert progress == [(0, 100, "step 0"), (50, 100, "step 50"), (100, 100, "step 100")]
        await client.call_tool("test_tool_with_logging")
        assert [entry["data"]["message"] for entry in logs][-3:] == [
            "Tool execution started", "Tool processing data", "Tool execution completed"]
        with pytest.raises(McpError) as info:
            await client.call_tool("no_such_tool")
        assert info.value.code == JsonRpcErrorCode.InvalidParams and "no_such_tool" in info.value.message
        failed = await client.call_tool("fetch_items", {"ids": ["9"]})
        assert failed["isError"] and failed["_meta"]["dev.mcpcore/error"]["data"]["reason"] == "no_match"


# -- tasks ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("era", ERAS)
async def test_tasks_are_created_waited_for_and_cancelled(server_url: str, era: str) -> None:
    seen: list[str] = []
    async with Client(server_url, era=era) as client:
        created = task_of(await client.call_tool("slow_compute", {"seconds": 0.3, "label": "x"}, task=True))
        assert created is not None and created["status"] == "working"
        result = await client.wait_task(created["taskId"], on_status=lambda t: seen.append(t["status"]), poll=0.05)
        assert result["content"][0]["text"] == "Computed x in 0.3s"
        assert (await client.get_task(created["taskId"]))["status"] == "completed"
        assert task_of(await client.call_tool("slow_compute", {"seconds": 0})) is None  # no task asked: a call
        long = task_of(await client.call_tool("slow_compute", {"seconds": 60}, task={"ttl": 60_000}))
        assert long is not None
        await client.cancel_task(long["taskId"])
        if era == "modern":
            with pytest.raises(McpError) as info:
                await client.wait_task(long["taskId"], poll=0.05)
            assert info.value.code == JsonRpcErrorCode.RequestCancelled
        else:
            assert (await client.get_task(long["taskId"]))["status"] == "cancelled"
            assert long["taskId"] in [t["taskId"] for t in await client.list_tasks()]
    if era == "modern":
        assert seen[-1] == "completed"


# -- notifications ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["http", "stdio"])
@pytest.mark.parametrize("era", ERAS)
async def test_listen_delivers_what_was_asked_for(server_url: str, kind: str, era: str) -> None:
    wanted = {"tools_list_changed": True, "resource_subscriptions": ["test://watched-resource"]}
    async with Client(**_target(kind, server_url), era=era) as client, client.listen(**wanted) as sub:
        assert sub.honored == {"toolsListChanged": True, "resourceSubscriptions": ["test://watched-resource"]}
        await client.call_tool("test_trigger_tool_change")
        assert (await sub.next(10))["method"] == "notifications/tools/list_changed"
        await client.call_tool("update_watched_resource")
        note = await sub.next(10)
        assert note["method"] == "notifications/resources/updated"
        assert note["params"]["uri"] == "test://watched-resource"
        with pytest.raises(TimeoutError):  # nothing else: prompts were not asked for
            await sub.next(0.3)


# -- auth and failures ------------------------------------------------------------------------------

class _HeaderAuth(httpx.Auth):
    def __init__(self, value: str) -> None:
        self.value = value

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["authorization"] = self.value
        yield request


async def test_a_bearer_token_or_an_httpx_auth() -> None:
    app = jwt_app()
    async with app.lifespan():
        async with Client(app, auth=token()) as client:
            assert client.era == "modern" and await client.list_tools()
        async with Client(app, era="legacy", auth=_HeaderAuth(f"Bearer {token(sub='bob')}")) as client:
            assert await client.list_tools()
        with pytest.raises(McpError) as info:
            async with Client(app):
                pass
    assert info.value.code == JsonRpcErrorCode.Unauthorized and getattr(info.value, "http_status", None) == 401


async def test_a_stdio_server_that_dies_is_reported_with_its_last_words() -> None:
    command = [sys.executable, "-c", "import sys; sys.stderr.write('cannot import servr\\n'); sys.exit(3)"]
    with pytest.raises(McpError) as info:
        async with Client(command, era="legacy"):
            pass
    assert "exited (code 3)" in info.value.message and "cannot import servr" in info.value.message


async def test_bad_targets_say_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="http"):
        Client("server:app")
    with pytest.raises(ValueError, match="env="):
        Client(STDIO, auth="t")
    with pytest.raises(McpError, match="cannot start the stdio server"):
        async with Client([str(tmp_path / "missing-binary")]):
            pass


async def test_server_card(server_url: str) -> None:
    async with Client(server_url) as client:
        card = await client.server_card()
    assert card is not None and card["name"] == "mcpcore-everything" and card["tools"]
    await asyncio.sleep(0)
