"""``proxy(url)`` mounted in a parent: the example server as a real backend (uvicorn), reached in
each era, by callers of each era: lists, calls, errors, progress, logs, questions, resources,
prompts, completions, list changes, and a backend that goes away."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpcore import McpApp, McpError, Settings
from mcpcore.compose import proxy
from mcpcore.credentials import CallerToken, StaticHeader
from mcpcore.testing import McpTestClient
from tests.auth.test_http_auth import SECRET, bearer, token
from tests.servers import free_port, run_server

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    sandbox = tmp_path_factory.mktemp("sandbox")
    with run_server(env={"MCP_EXAMPLE_SANDBOX": str(sandbox), "MCP_LOG_LEVEL": "info"}) as url:
        yield url


def gateway(url: str, era: str, **kw: Any) -> McpApp:
    app = McpApp("gateway", settings=Settings.from_env({}))
    app.mount(proxy(url, era=era, **kw), namespace="ex")
    return app


@pytest.mark.parametrize("backend_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_lists_calls_and_errors_travel(backend: str, era: str, backend_era: str) -> None:
    async with McpTestClient(gateway(backend, backend_era), era=era) as c:
        tools = {t["name"]: t for t in await c.list_tools()}
        assert "ex_search" in tools and "ex_test_error_handling" in tools
        assert tools["ex_search"]["inputSchema"]["properties"]["query"]["type"] == "string"
        r = await c.call_tool("ex_search", {"query": "red"})
        assert r["structuredContent"]["items"] == ["red widget", "red gadget"] and not r.get("isError")
        assert ("resultType" in r) == (era == "modern")
        bad = await c.call_tool("ex_search", {"query": "red", "limit": 500})  # the backend validates
        assert bad["isError"] and "less than or equal to 50" in bad["content"][0]["text"]
        failed = await c.call_tool("ex_fetch_items", {"ids": ["9"]})  # a tool error keeps its envelope
        envelope = failed["_meta"]["dev.mcpcore/error"]
        assert failed["isError"] and envelope["code"] == -32001 and envelope["data"]["reason"] == "no_match"
        with pytest.raises(McpError) as e:  # a JSON-RPC error keeps its code and data
            await c.read_resource("catalog://ex/items/99")
        assert e.value.code == -32602
        read = await c.read_resource("catalog://ex/items/2")
        assert read["contents"][0] == {"uri": "catalog://ex/items/2", "mimeType": "text/plain", "text": "blue widget"}
        prompts = {p["name"] for p in (await c.request("prompts/list"))["prompts"]}
        assert prompts and all(p.startswith("ex_") for p in prompts)


@pytest.mark.parametrize("backend_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_progress_and_logs_reach_the_caller(backend: str, era: str, backend_era: str) -> None:
    async with McpTestClient(gateway(backend, backend_era), era=era, log_level="info") as c:
        seen: list[tuple[float, float | None, str | None]] = []
        r = await c.call_tool("ex_test_tool_with_progress", {}, on_progress=lambda p, t, m: seen.append((p, t, m)))
        assert r["content"][0]["text"] == "Tool with progress executed successfully"
        assert [s[0] for s in seen] == [0, 50, 100]
        c.messages.clear()
        await c.call_tool("ex_test_tool_with_logging", {})
        logs = [m["params"]["data"] for m in c.messages if m.get("method") == "notifications/message"]
        assert len(logs) == 3, c.messages


@pytest.mark.parametrize("backend_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_questions_travel_both_ways(backend: str, era: str, backend_era: str) -> None:
    handlers = {
        "elicitation/create": lambda p: {"action": "accept", "content": {"name": "Ada"}},
        "sampling/createMessage": lambda p: {"role": "assistant", "content": {"type": "text", "text": "Hello"},
                                             "model": "m"},
        "roots/list": lambda p: {"roots": [{"uri": "file:///tmp", "name": "tmp"}]},
    }
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    async with McpTestClient(gateway(backend, backend_era), era=era, capabilities=caps, handlers=handlers) as c:
        c.answers_input_required = True
        r = await c.with_rounds("tools/call", {"name": "ex_test_awaited_questions", "arguments": {}})
        assert r["content"][0]["text"] == "Hello Ada (1 roots)", r


async def test_a_2025_backends_question_waits_for_the_2026_callers_retry(backend: str) -> None:
    """The backend's call stays open across the caller's retries: one round per question, each
    answered by a new request; an answer to a question nobody waits on is refused."""
    app = gateway(backend, "legacy")
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    async with McpTestClient(app, era="modern", capabilities=caps) as c:
        call = {"name": "ex_test_awaited_questions", "arguments": {}}
        first = await c.request("tools/call", call)
        assert first["resultType"] == "input_required", first
        (key, asked), = first["inputRequests"].items()
        assert asked["method"] == "elicitation/create"
        with pytest.raises(McpError) as stale:
            await c.request("tools/call", {**call, "requestState": "mcpcore-proxy-ask:nope",
                                           "inputResponses": {key: {"action": "accept"}}})
        assert stale.value.code == -32602 and stale.value.data["reason"] == "input_state_unknown"
        answers = [{"action": "accept", "content": {"name": "Ada"}},
                   {"role": "assistant", "content": {"type": "text", "text": "Hi"}, "model": "m"},
                   {"roots": []}]
        result, rounds = first, 0
        while result.get("resultType") == "input_required":
            (key, asked), = result["inputRequests"].items()
            result = await c.request("tools/call", {**call, "requestState": result["requestState"],
                                                    "inputResponses": {key: answers[rounds]}})
            rounds += 1
        assert rounds == 3 and result["content"][0]["text"] == "Hi Ada (0 roots)", result
        with pytest.raises(McpError, match="not waiting on"):  # answered already
            await c.request("tools/call", {**call, "requestState": first["requestState"],
                                           "inputResponses": {key: answers[0]}})


@pytest.mark.parametrize("era", ERAS)
async def test_a_backend_list_change_reaches_a_listening_client(backend: str, era: str) -> None:
    app = gateway(backend, era)
    async with McpTestClient(app, era=era) as watcher, McpTestClient(app, era=era) as actor, \
            watcher.listen(tools_list_changed=True) as sub:
        await asyncio.sleep(0.3)  # the proxy's own stream on the backend is open
        await actor.call_tool("ex_test_trigger_tool_change", {})
        note = await sub.next(10)
        assert note["method"] == "notifications/tools/list_changed"


@pytest.mark.parametrize("backend_era", ERAS)
async def test_a_cancelled_call_is_cancelled_at_the_backend(backend_era: str) -> None:
    with run_server("tests.compose.backend_app:app") as url:
        async with McpTestClient(gateway(url, backend_era), era="legacy") as c:
            call = asyncio.ensure_future(c.request("tools/call", {"name": "ex_wait_for_cancel", "arguments": {}},
                                                   request_id="cancel-me"))
            await asyncio.sleep(0.5)  # the call has reached the backend
            await c.notify("notifications/cancelled", {"requestId": "cancel-me", "reason": "changed my mind"})
            await asyncio.sleep(0.2)
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, McpError):
                await call
        await _backend_saw_one_cancellation(url)


async def _backend_saw_one_cancellation(url: str) -> None:
    """Within 5 s, the backend at ``url`` counts one cancelled call."""
    async with McpTestClient(url=url, era="modern") as direct:
        deadline = time.monotonic() + 5
        while (await direct.call_tool("backend_cancellations"))["structuredContent"] != 1:
            assert time.monotonic() < deadline, "the backend never saw the cancellation"
            await asyncio.sleep(0.1)

@pytest.mark.parametrize("era", ERAS)
async def test_a_backend_resource_update_reaches_a_subscribed_client(backend: str, era: str) -> None:
    app = gateway(backend, era)
    async with McpTestClient(app, era=era) as watcher, McpTestClient(app, era=era) as actor, \
            watcher.listen(resource_subscriptions=["test://ex/watched-resource"]) as sub:
        await asyncio.sleep(0.3)  # the proxy's own stream on the backend is open
        await actor.call_tool("ex_update_watched_resource", {})
        note = await sub.next(10)
        assert note["method"] == "notifications/resources/updated"
        assert note["params"]["uri"] == "test://ex/watched-resource"


async def _read_body(receive: Any) -> bytes:
    """The whole request body an ASGI app receives."""
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            return body

async def test_the_callers_authorization_never_reaches_the_backend() -> None:
    seen: list[tuple[str, str | None]] = []

    async def backend_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        """A minimal 2026-07-28 backend: one tool, and the Authorization of every request noted."""
        if scope["type"] != "http":
            return
        req = json.loads(await _read_body(receive))
        seen.append((req.get("method"), dict(scope["headers"]).get(b"authorization", b"").decode() or None))
        if req.get("method") == "server/discover":
            result: dict[str, Any] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        elif req.get("method") == "tools/list":
            result = {"tools": [{"name": "who", "description": "Who", "inputSchema": {"type": "object"}}]}
        elif req.get("method") == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
        else:
            result = {}
        out = json.dumps({"jsonrpc": "2.0", "id": req.get("id"), "result": result}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": out})

    transport = httpx.ASGITransport(app=backend_app)  # type: ignore[arg-type]
    for era in ERAS:
        seen.clear()
        app = gateway("http://backend.test/mcp", "modern", transport=transport,
                      credentials=StaticHeader("Authorization", "proxy-own", prefix="Bearer "))
        async with McpTestClient(app, era=era, headers={"authorization": "Bearer caller-token"}) as c:
            assert (await c.call_tool("ex_who", {}))["content"][0]["text"] == "ok"
        assert ("tools/call", "Bearer proxy-own") in seen
        assert all(auth == "Bearer proxy-own" for _, auth in seen), seen
        seen.clear()
        bare = gateway("http://backend.test/mcp", "modern", transport=transport)  # credentials: none
        async with McpTestClient(bare, era=era, headers={"authorization": "Bearer caller-token"}) as c:
            await c.call_tool("ex_who", {})
        assert ("tools/call", None) in seen and all(auth is None for _, auth in seen), seen
    seen.clear()
    settings = Settings.from_env({}, auth_mode="jwt", auth_secret_key=SECRET)
    opted = McpApp("gateway", settings=settings)
    opted.mount(proxy("http://backend.test/mcp", era="modern", transport=transport,
                      credentials=CallerToken("https://backend.test")), namespace="ex")
    mine = token(aud="https://backend.test")
    async with McpTestClient(opted, era="modern", headers=bearer(mine)) as c:
        assert (await c.call_tool("ex_who", {}))["content"][0]["text"] == "ok"
        other = McpTestClient(opted, era="modern", headers=bearer(token(aud="https://elsewhere.test")))
        async with other:
            refused = await other.call_tool("ex_who", {})  # a token for another audience never leaves
            assert refused["isError"]
    assert ("tools/call", f"Bearer {mine}") in seen
    assert sum(1 for m, _ in seen if m == "tools/call") == 1


async def test_a_backend_down_answers_503_style_opens_the_circuit_and_readyz_reports_it() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens
    app = gateway(url, "modern", failures=2, cooldown_s=30)
    app.registry.add(_fixed_tool())
    async with McpTestClient(app, era="modern") as c:
        ready = await c.http.get(c.url.replace("/mcp", "/readyz"))
        assert ready.status_code == 200 and ready.json()["checks"]["proxy:ex"].startswith("unavailable")
    required = gateway(url, "modern", failures=1, required=True)
    required.registry.add(_fixed_tool())
    async with McpTestClient(required, era="modern") as c:
        assert (await c.http.get(c.url.replace("/mcp", "/readyz"))).status_code == 503


async def test_a_call_while_the_backend_is_down_is_a_tool_error_with_a_retry_hint(backend: str) -> None:
    port = free_port()
    with run_server(port=port) as url:
        app = gateway(url, "modern", failures=1, cooldown_s=30)
        async with McpTestClient(app, era="modern") as c:
            assert (await c.call_tool("ex_search", {"query": "red"}))["structuredContent"]["totalCount"] == 2
            from tests.servers import PROCESSES

            PROCESSES[url].kill()
            PROCESSES[url].wait(10)
            started = time.monotonic()
            r = await c.call_tool("ex_search", {"query": "red"})
            assert r["isError"]
            envelope = r["_meta"]["dev.mcpcore/error"]
            assert envelope["code"] == -32000 and envelope["data"]["reason"] == "backend_unavailable"
            assert envelope["data"]["retryAfterMs"] >= 1000 and "try again" in r["content"][0]["text"]
            again = await c.call_tool("ex_search", {"query": "red"})  # the circuit is open: no backend call
            assert again["isError"] and time.monotonic() - started < 5


def _fixed_tool() -> Any:
    from mcpcore import tool

    @tool
    def local() -> str:
        """A tool of the gateway itself."""
        return "local"

    return local


STDIO_EXAMPLE = [sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio"]


@pytest.mark.parametrize("backend_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_stdio_command_as_a_backend(era: str, backend_era: str) -> None:
    app = McpApp("gateway", settings=Settings.from_env({}))
    app.mount(proxy(STDIO_EXAMPLE, era=backend_era), namespace="ex")
    async with McpTestClient(app, era=era) as c:
        assert "ex_search" in {t["name"] for t in await c.list_tools()}
        r = await c.call_tool("ex_search", {"query": "red"})
        assert r["structuredContent"]["items"] == ["red widget", "red gadget"]
        seen: list[float] = []
        await c.call_tool("ex_test_tool_with_progress", {}, on_progress=lambda p, t, m: seen.append(p))
        assert seen == [0, 50, 100]
        failed = await c.call_tool("ex_fetch_items", {"ids": ["9"]})
        assert failed["isError"] and failed["_meta"]["dev.mcpcore/error"]["data"]["reason"] == "no_match"


TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


async def test_a_backend_task_is_created_and_polled_through_the_gateway(backend: str) -> None:
    async with McpTestClient(gateway(backend, "modern"), era="modern", capabilities=TASKS) as c:
        created = await c.call_tool("ex_slow_compute", {"seconds": 0.3, "label": "nightly"})
        assert created["resultType"] == "task" and created["taskId"].startswith("proxy:ex:"), created
        deadline = time.monotonic() + 10
        while (task := await c.request("tasks/get", {"taskId": created["taskId"]}))["status"] == "working":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        assert task["status"] == "completed" and task["taskId"] == created["taskId"], task
        assert task["result"]["content"][0]["text"] == "Computed nightly in 0.3s"
        with pytest.raises(McpError):  # an id the gateway never gave is nobody's
            await c.request("tasks/get", {"taskId": "proxy:ex:nope"})


async def _until(c: McpTestClient, task_id: str, *, leave: str = "working") -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while (task := await c.request("tasks/get", {"taskId": task_id}))["status"] == leave:
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.05)
    return task


async def test_a_backend_task_is_answered_and_cancelled_through_the_gateway(backend: str) -> None:
    caps = {**TASKS, "elicitation": {}}
    async with McpTestClient(gateway(backend, "modern"), era="modern", capabilities=caps) as c:
        created = await c.call_tool("ex_confirm_delete", {"filename": "old.txt"})
        assert created["resultType"] == "task" and created["taskId"].startswith("proxy:ex:"), created
        task = await _until(c, created["taskId"])
        assert task["status"] == "input_required", task
        [key] = task["inputRequests"]
        ack = await c.request("tasks/update", {"taskId": created["taskId"],
                                               "inputResponses": {key: {"action": "accept",
                                                                        "content": {"confirm": True}}}})
        assert ack.get("resultType", "complete") == "complete"
        done = await _until(c, created["taskId"], leave="input_required")
        done = await _until(c, created["taskId"]) if done["status"] == "working" else done
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "Deleted old.txt", done
        slow = await c.call_tool("ex_slow_compute", {"seconds": 30})
        await c.request("tasks/cancel", {"taskId": slow["taskId"]})
        cancelled = await _until(c, slow["taskId"])
        assert cancelled["status"] == "cancelled" and cancelled["taskId"] == slow["taskId"], cancelled


@pytest.mark.parametrize("backend_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_completions_are_asked_of_the_backend(backend: str, era: str, backend_era: str) -> None:
    async with McpTestClient(gateway(backend, backend_era), era=era) as c:
        prompt = await c.request("completion/complete", {
            "ref": {"type": "ref/prompt", "name": "ex_test_prompt_with_arguments"},
            "argument": {"name": "arg1", "value": "par"}})
        assert prompt["completion"]["values"] == ["paris", "park", "party"], prompt
        template = await c.request("completion/complete", {
            "ref": {"type": "ref/resource", "uri": "test://ex/template/{id}/data"},
            "argument": {"name": "id", "value": "1"}})
        assert template["completion"]["values"] == ["1", "123"], template


@pytest.mark.parametrize("backend_era", ERAS)
async def test_a_2026_callers_cancelled_call_is_cancelled_at_the_backend(backend_era: str) -> None:
    """A 2026-07-28 caller cancels by closing its request (a real connection to a real gateway
    server); the backend is told."""
    with run_server("tests.compose.backend_app:app") as url, \
            run_server("tests.compose.gateway_app:app", env={"PROXY_BACKENDS": f"ex={url}",
                                                             "PROXY_BACKEND_ERA": backend_era}) as front:
        async with McpTestClient(url=front, era="modern") as c:
            call = asyncio.ensure_future(c.call_tool("ex_wait_for_cancel", {}))
            await asyncio.sleep(0.7)  # the call has reached the backend
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, McpError):
                await call
        await _backend_saw_one_cancellation(url)


@pytest.mark.parametrize("era", ERAS)
async def test_backend_prompt_and_resource_list_changes_reach_a_listening_client(backend: str, era: str) -> None:
    app = gateway(backend, era)
    async with McpTestClient(app, era=era) as watcher, McpTestClient(app, era=era) as actor, \
            watcher.listen(prompts_list_changed=True, resources_list_changed=True) as sub:
        await asyncio.sleep(0.3)  # the proxy's own stream on the backend is open
        await actor.call_tool("ex_test_trigger_prompt_change", {})
        assert (await sub.next(10))["method"] == "notifications/prompts/list_changed"
        await actor.call_tool("ex_test_trigger_resource_change", {})
        assert (await sub.next(10))["method"] == "notifications/resources/list_changed"


async def test_lists_of_a_backend_without_a_notification_stream_are_refreshed_every_ttl() -> None:
    """A 2026-07-28 backend that gives ``ttlMs`` and refuses ``subscriptions/listen``: its lists
    are fetched again once the ttl has passed, and a listening client hears of the change."""
    tools = {"names": ["first"]}
    lists: list[float] = []

    async def backend_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        req = json.loads(await _read_body(receive))
        method = req.get("method")
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": req.get("id")}
        if method == "server/discover":
            reply["result"] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}}}
        elif method == "tools/list":
            lists.append(time.monotonic())
            reply["result"] = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in tools["names"]],
                               "ttlMs": 1000, "cacheScope": "public", "resultType": "complete"}
        else:
            reply["error"] = {"code": -32601, "message": f"no {method}"}
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(reply).encode()})

    app = gateway("http://backend.test/mcp", "modern", transport=httpx.ASGITransport(app=backend_app),  # type: ignore[arg-type]
                  refresh_s=300)
    async with McpTestClient(app, era="modern") as c, McpTestClient(app, era="modern") as watcher, \
            watcher.listen(tools_list_changed=True) as sub:
        assert {t["name"] for t in await c.list_tools()} == {"ex_first"}
        tools["names"] = ["second"]
        note = await sub.next(5)  # within the ttl (1 s) and a turn, not refresh_s (300 s)
        assert note["method"] == "notifications/tools/list_changed"
        assert {t["name"] for t in await c.list_tools()} == {"ex_second"}
        assert 0.9 <= lists[-1] - lists[-2] < 3, lists


@pytest.mark.parametrize("era", ERAS)
async def test_a_private_list_is_fetched_and_kept_per_caller(era: str) -> None:
    """A backend reached with each caller's own token lists by who asks: each caller's list is
    fetched with its token, kept for the backend's ttlMs, and never shown to another caller."""
    env = {"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SECRET}
    with run_server("tests.compose.private_backend:app", env=env) as url:
        settings = Settings.from_env({}, auth_mode="jwt", auth_secret_key=SECRET)
        app = McpApp("gateway", settings=settings)
        app.mount(proxy(url, era="modern", credentials=CallerToken("https://backend.test")), namespace="ex")
        alice = bearer(token(sub="alice", aud="https://backend.test"))
        bob = bearer(token(sub="bob", aud="https://backend.test"))
        async with McpTestClient(app, era=era, headers=alice) as a, McpTestClient(app, era=era, headers=bob) as b:
            assert {t["name"] for t in await a.list_tools()} >= {"ex_common", "ex_alice_only"}
            assert "ex_alice_only" not in {t["name"] for t in await b.list_tools()}  # alice's list is not bob's
            assert (await a.call_tool("ex_alice_only", {}))["content"][0]["text"] == "for alice"
            with pytest.raises(McpError):  # bob cannot call what his list does not hold
                r = await b.call_tool("ex_alice_only", {})
                if r.get("isError"):
                    raise McpError(-32602, r["content"][0]["text"])
            counts = (await a.call_tool("ex_list_fetches", {}))["structuredContent"]
            assert counts == {"alice": 1, "bob": 1}, counts  # the gateway's lists: one fetch each
            await a.list_tools()  # within the ttl (1 s): from the cache
            assert (await a.call_tool("ex_list_fetches", {}))["structuredContent"]["alice"] == 1
            await asyncio.sleep(1.2)
            await a.list_tools()  # past the ttl: fetched again, with alice's token
            assert (await a.call_tool("ex_list_fetches", {}))["structuredContent"] == {"alice": 2, "bob": 1}
