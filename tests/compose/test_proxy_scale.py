"""Two gateway instances behind the round-robin proxy, sharing one Redis, proxying one 2025-era
backend (the example server, counting the ``initialize`` requests it answers): the backend session
of each caller identity is opened once and reused by both instances; a backend restart costs one
re-initialize, not an error; a list change on the backend reaches a client on either instance,
once."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from mcpcore import McpError
from mcpcore.testing import McpTestClient
from tests.auth.test_http_auth import SECRET, bearer, token
from tests.scale.harness import cluster, proxy
from tests.servers import PROCESSES, free_port, run_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BACKEND = "tests.compose.backend_app:app"


async def initializes(backend: str) -> dict[str, int]:
    async with McpTestClient(url=backend, era="modern") as c:
        counts: dict[str, int] = (await c.call_tool("backend_initializes"))["structuredContent"]
        return counts


async def calls(front: str, who: str, era: str, n: int) -> None:
    async with McpTestClient(url=front, era=era, headers=bearer(token(sub=who))) as c:
        for i in range(n):
            r = await c.call_tool("be_search", {"query": "red"})
            assert not r.get("isError") and r["structuredContent"]["totalCount"] == 2, (i, r)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_one_backend_session_per_identity_across_instances_and_a_restart(tmp_path: Path, era: str) -> None:
    port = free_port()
    backend = f"http://127.0.0.1:{port}/mcp"
    env = {"PROXY_BACKENDS": f"be={backend}", "PROXY_BACKEND_ERA": "legacy", "MCP_AUTH_MODE": "jwt",
           "MCP_AUTH_SECRET_KEY": SECRET}
    with contextlib.ExitStack() as stack:
        stack.enter_context(run_server(BACKEND, port=port))
        c = stack.enter_context(cluster(tmp_path, "tests.compose.gateway_app:app", n=2, extra_env=env))
        front = stack.enter_context(proxy(c.urls))
        await calls(front, "alice", era, 200)
        counted = await initializes(backend)
        assert counted["caller"] == 1, counted  # 200 calls over two instances: one backend session
        await calls(front, "bob", era, 10)
        assert (await initializes(backend))["caller"] == 2  # another identity gets its own
        await calls(front, "alice", era, 10)
        assert (await initializes(backend))["caller"] == 2
        PROCESSES[backend].kill()  # the backend restarts: every session it held is gone
        PROCESSES[backend].wait(10)
        with run_server(BACKEND, port=port):
            await calls(front, "alice", era, 20)  # no error: the session is re-opened once
            assert (await initializes(backend))["caller"] == 1


async def test_a_backend_list_change_reaches_each_client_once_on_either_instance(tmp_path: Path) -> None:
    port = free_port()
    backend = f"http://127.0.0.1:{port}/mcp"
    env = {"PROXY_BACKENDS": f"be={backend}", "PROXY_BACKEND_ERA": "legacy"}
    with run_server(BACKEND, port=port), cluster(tmp_path, "tests.compose.gateway_app:app", n=2, extra_env=env) as c:
        for listening_on, acting_on in ((c.urls[0], c.urls[1]), (c.urls[1], c.urls[0])):
            for era in ("legacy", "modern"):
                async with McpTestClient(url=listening_on, era=era) as watcher, \
                        McpTestClient(url=acting_on, era=era) as actor, watcher.listen(tools_list_changed=True) as sub:
                    await asyncio.sleep(0.2)
                    await actor.call_tool("be_test_trigger_tool_change", {})
                    note: dict[str, Any] = await sub.next(10)
                    assert note["method"] == "notifications/tools/list_changed"
                    with pytest.raises(TimeoutError):  # once: not again from the other instance's listener
                        again = await sub.next(2)
                        pytest.fail(f"delivered twice: {again}")


async def test_a_backend_resource_update_reaches_a_subscribed_client_once(tmp_path: Path) -> None:
    port = free_port()
    backend = f"http://127.0.0.1:{port}/mcp"
    env = {"PROXY_BACKENDS": f"be={backend}", "PROXY_BACKEND_ERA": "legacy"}
    with run_server(BACKEND, port=port), cluster(tmp_path, "tests.compose.gateway_app:app", n=2, extra_env=env) as c:
        for era in ("legacy", "modern"):
            async with McpTestClient(url=c.urls[0], era=era) as watcher, \
                    McpTestClient(url=c.urls[1], era=era) as actor, \
                    watcher.listen(resource_subscriptions=["test://be/watched-resource"]) as sub:
                await asyncio.sleep(0.3)
                await actor.call_tool("be_update_watched_resource", {})
                note: dict[str, Any] = await sub.next(10)
                assert note["method"] == "notifications/resources/updated"
                assert note["params"]["uri"] == "test://be/watched-resource"
                with pytest.raises(TimeoutError):
                    again = await sub.next(2)
                    pytest.fail(f"delivered twice: {again}")


async def test_a_callers_own_lists_are_fetched_once_per_ttl_across_instances(tmp_path: Path) -> None:
    """A backend listing by who asks (``cacheScope: private``, ``ttlMs`` 30 s), reached with each
    caller's own token: its lists are shared by both instances through Redis, per caller."""
    port = free_port()
    backend = f"http://127.0.0.1:{port}/mcp"
    auth = {"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SECRET}
    env = {"PROXY_BACKENDS": f"pv={backend}", "PROXY_BACKEND_ERA": "modern",
           "PROXY_CALLER_AUDIENCE": "https://backend.test", **auth}
    with run_server("tests.compose.private_backend:app", port=port, env={**auth, "PRIVATE_TTL_MS": "30000"}), \
            cluster(tmp_path, "tests.compose.gateway_app:app", n=2, extra_env=env) as c, proxy(c.urls) as front:
        seen: dict[str, set[str]] = {}
        for who in ("alice", "bob"):
            for era in ("modern", "legacy", "modern", "legacy"):  # round-robin: each instance, twice
                headers = bearer(token(sub=who, aud="https://backend.test"))
                async with McpTestClient(url=front, era=era, headers=headers) as cl:
                    names = {t["name"] for t in await cl.list_tools()}
                    assert seen.setdefault(who, names) == names, (who, names)
        assert "pv_alice_only" in seen["alice"] and "pv_alice_only" not in seen["bob"], seen
        async with McpTestClient(url=backend, era="modern", headers=bearer(token(sub="carol"))) as direct:
            fetched = (await direct.call_tool("list_fetches"))["structuredContent"]
        assert fetched.get("alice") == 1 and fetched.get("bob") == 1, fetched


async def test_a_2026_callers_retry_reaching_the_other_instance_is_handed_over(tmp_path: Path) -> None:
    """A 2025 backend asks during a call (three questions); each retry of the 2026-07-28 caller goes
    to the other instance (round-robin), which hands its answer to the instance holding the
    backend's call through Redis and returns what comes next."""
    port = free_port()
    backend = f"http://127.0.0.1:{port}/mcp"
    env = {"PROXY_BACKENDS": f"be={backend}", "PROXY_BACKEND_ERA": "legacy"}
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    answers = [{"action": "accept", "content": {"name": "Ada"}},
               {"role": "assistant", "content": {"type": "text", "text": "Hi"}, "model": "m"},
               {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}]
    with run_server(BACKEND, port=port), cluster(tmp_path, "tests.compose.gateway_app:app", n=2, extra_env=env) as c, \
            proxy(c.urls) as front:
        async with McpTestClient(url=front, era="modern", capabilities=caps) as cl:
            call = {"name": "be_test_awaited_questions", "arguments": {}}
            result = await cl.request("tools/call", call)
            rounds = 0
            while result.get("resultType") == "input_required":
                assert rounds < 3, result
                [key] = result["inputRequests"]
                result = await cl.request("tools/call", {**call, "requestState": result["requestState"],
                                                         "inputResponses": {key: answers[rounds]}})
                rounds += 1
            assert rounds == 3 and result["content"][0]["text"] == "Hi Ada (1 roots)", result
            with pytest.raises(McpError) as stale:  # a state nobody holds: refused on either instance
                await cl.request("tools/call", {**call, "requestState": "mcpcore-proxy-ask:gone.nope",
                                                "inputResponses": {"q": answers[0]}})
            assert stale.value.data["reason"] == "input_state_unknown"
