"""A stdio command as a proxied backend: one process per caller identity (bounded, closed when
idle), and the server's log messages and questions reaching the caller of the call they belong to."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any

import pytest

from mcpcore import ConfigurationError, McpApp, Settings
from mcpcore.compose import proxy
from mcpcore.compose.stdio import StdioBackend
from mcpcore.testing import McpTestClient
from tests.auth.test_http_auth import SECRET, bearer, token

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]
COMMAND = [sys.executable, "-m", "mcpcore", "run", "tests.compose.stdio_backend_app:app", "--transport", "stdio"]
ADA = {"elicitation/create": lambda p: {"action": "accept", "content": {"name": "Ada"}}}


def gateway(backend_era: str, pool: dict[str, Any] | None = None, **settings: Any) -> tuple[McpApp, Any]:
    app = McpApp("gateway", settings=Settings.from_env({}, **settings))
    p = proxy(COMMAND, era=backend_era, **(pool or {}))
    app.mount(p, namespace="io")
    return app, p


def backend_of(p: Any) -> StdioBackend:
    assert isinstance(p.backend, StdioBackend)
    return p.backend


def logged(c: McpTestClient) -> list[str]:
    return [m["params"]["data"]["message"] for m in c.messages if m.get("method") == "notifications/message"]


@pytest.mark.parametrize("backend_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_log_messages_and_questions_reach_the_caller(era: str, backend_era: str) -> None:
    app, _ = gateway(backend_era)
    async with McpTestClient(app, era=era, log_level="info", capabilities={"elicitation": {}}, handlers=ADA) as c:
        c.answers_input_required = True
        assert (await c.call_tool("io_chatty"))["content"][0]["text"] == "said hello"
        assert logged(c) == ["hello from the backend"]
        # a 2025 backend's question to a 2026-07-28 caller: input_required, answered by the retry
        assert (await c.call_tool("io_ask"))["content"][0]["text"] == "hi Ada"


@pytest.mark.parametrize("backend_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_caller_below_the_log_level_gets_no_log(era: str, backend_era: str) -> None:
    app, _ = gateway(backend_era)
    async with McpTestClient(app, era=era) as c:
        await c.set_log_level("warning")  # 2025: logging/setLevel on the session; 2026-07-28: each request's
        await c.call_tool("io_chatty")
        assert logged(c) == []


@pytest.mark.parametrize("backend_era", ERAS)
async def test_each_caller_identity_gets_its_own_process(backend_era: str) -> None:
    app, p = gateway(backend_era, auth_mode="jwt", auth_secret_key=SECRET)
    ada, bob = bearer(token(sub="ada")), bearer(token(sub="bob"))
    async with McpTestClient(app, era="legacy", headers=ada) as a, McpTestClient(app, era="modern", headers=bob) as b, \
            McpTestClient(app, era="modern", headers=ada) as a2:
        first = (await a.call_tool("io_whoami"))["structuredContent"]
        other = (await b.call_tool("io_whoami"))["structuredContent"]
        again = (await a2.call_tool("io_whoami"))["structuredContent"]  # the same identity on another client
        assert first["pid"] != other["pid"] and again == {"pid": first["pid"], "calls": 2, "cancelled": 0}
        assert other["calls"] == 1
        assert len(backend_of(p).processes) == 2
        if backend_era == "legacy":
            assert backend_of(p).initializes == 3  # the proxy's own, and one per identity


async def test_the_pool_is_bounded_and_idle_processes_close() -> None:
    app, p = gateway("legacy", auth_mode="jwt", auth_secret_key=SECRET)
    ada, bob = bearer(token(sub="ada")), bearer(token(sub="bob"))
    async with McpTestClient(app, era="modern", headers=ada) as a, McpTestClient(app, era="modern", headers=bob) as b:
        backend = backend_of(p)
        backend.max_processes = 1
        first = (await a.call_tool("io_whoami"))["structuredContent"]["pid"]
        await b.call_tool("io_whoami")  # ada's idle process makes room
        assert len(backend.processes) == 1
        fresh = (await a.call_tool("io_whoami"))["structuredContent"]  # bob's idle process made room in turn
        assert fresh["pid"] != first and fresh["calls"] == 1
        backend.idle_s = 0.2
        deadline = time.monotonic() + 10
        while backend.processes:
            assert time.monotonic() < deadline, backend.processes
            await asyncio.sleep(0.1)
        assert (await a.call_tool("io_whoami"))["structuredContent"]["calls"] == 1  # a fresh process


async def test_proxy_sizes_the_pool_a_pool_of_one_reuses_its_process_and_idle_ones_close() -> None:
    app, p = gateway("legacy", {"max_processes": 1, "idle_s": 3.0}, auth_mode="jwt", auth_secret_key=SECRET)
    ada, bob = bearer(token(sub="ada")), bearer(token(sub="bob"))
    async with McpTestClient(app, era="legacy", headers=ada) as a, McpTestClient(app, era="modern", headers=bob) as b:
        backend = backend_of(p)
        assert (backend.max_processes, backend.idle_s) == (1, 3.0)
        first = (await a.call_tool("io_whoami"))["structuredContent"]
        again = (await a.call_tool("io_whoami"))["structuredContent"]
        assert again == {"pid": first["pid"], "calls": 2, "cancelled": 0}  # one process, reused
        other = (await b.call_tool("io_whoami"))["structuredContent"]
        assert other["pid"] != first["pid"] and list(backend.processes) != [] and len(backend.processes) == 1
        started = time.monotonic()
        while backend.processes:  # closed after 3 s without calls (3 s: two calls under load stay within it)
            assert time.monotonic() - started < 10, backend.processes
            await asyncio.sleep(0.1)
        assert time.monotonic() - started >= 0.5
        assert (await b.call_tool("io_whoami"))["structuredContent"]["calls"] == 1  # a fresh process


@pytest.mark.parametrize(("pool", "says"), [
    ({"max_processes": 0}, "max_processes"), ({"max_processes": 1.5}, "max_processes"),
    ({"max_processes": True}, "max_processes"), ({"idle_s": 0}, "idle_s"), ({"idle_s": -1.0}, "idle_s"),
    ({"idle_s": float("nan")}, "idle_s"), ({"idle_s": "300"}, "idle_s")])
def test_proxy_refuses_a_pool_that_is_not_positive(pool: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigurationError, match=f"proxy\\({says}=\\) must be"):
        proxy(COMMAND, **pool)


def test_an_http_backend_takes_no_pool() -> None:
    with pytest.raises(ConfigurationError, match="stdio command"):
        proxy("http://127.0.0.1:1/mcp", max_processes=2)


async def test_a_log_of_one_of_several_calls_in_flight_is_not_guessed() -> None:
    app, p = gateway("legacy")
    async with McpTestClient(app, era="legacy", log_level="info") as c:
        said, waited = await asyncio.gather(c.call_tool("io_chatty", {"seconds": 0.3}),
                                            c.call_tool("io_wait", {"seconds": 1.5}))
        assert said["content"][0]["text"] == "said hello" and waited["content"][0]["text"] == "waited"
        assert backend_of(p).unattributed == 1 and logged(c) == []  # two calls in flight: whose log?
        await c.call_tool("io_chatty")  # alone again: attributed
        assert logged(c) == ["hello from the backend"]


async def test_a_new_caller_waits_while_every_process_is_busy() -> None:
    app, p = gateway("legacy", auth_mode="jwt", auth_secret_key=SECRET)
    ada, bob = bearer(token(sub="ada")), bearer(token(sub="bob"))
    async with McpTestClient(app, era="modern", headers=ada) as a, McpTestClient(app, era="modern", headers=bob) as b:
        backend = backend_of(p)
        backend.max_processes = 1
        await a.call_tool("io_whoami")
        busy = asyncio.ensure_future(a.call_tool("io_wait", {"seconds": 1.0}))
        await asyncio.sleep(0.2)
        started = time.monotonic()
        mine = (await b.call_tool("io_whoami"))["structuredContent"]
        assert (await busy)["content"][0]["text"] == "waited"  # ada's call was not cut short
        assert mine["calls"] == 1 and time.monotonic() - started >= 0.5
        assert len(backend.processes) == 1


async def test_a_call_the_caller_cancels_is_cancelled_in_its_process() -> None:
    app, _ = gateway("legacy")
    async with McpTestClient(app, era="legacy") as c:
        await c.call_tool("io_whoami")
        call = asyncio.ensure_future(c.request("tools/call", {"name": "io_wait", "arguments": {"seconds": 30}},
                                               request_id="long"))
        await asyncio.sleep(1.0)
        await c.notify("notifications/cancelled", {"requestId": "long", "reason": "enough"})
        deadline = time.monotonic() + 10
        while (await c.call_tool("io_whoami"))["structuredContent"]["cancelled"] == 0:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
        call.cancel()
        with contextlib.suppress(BaseException):
            await call
