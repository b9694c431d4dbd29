"""Scale-out on Redis: several uvicorn instances sharing one Redis topology (a server, a 3-master
Cluster, a primary and replica behind three sentinels), a client that sends every request to a
different instance than the last."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from mcpcore import McpError
from mcpcore.testing import McpTestClient, parse_sse
from tests.storage.conftest import redis_again

from .harness import Cluster, RoundRobinClient, cluster, kill

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


TOPOLOGIES = ["standalone", "cluster", "sentinel"]


@pytest.fixture(scope="module", params=TOPOLOGIES)
def example(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("example"), topology=request.param) as c:
        yield c


@pytest.fixture(scope="module", params=TOPOLOGIES)
def streaming(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("streaming"), "tests.apps.streaming:app", n=2,
                 topology=request.param) as c:
        yield c


def _handlers() -> dict[str, Any]:
    async def elicit(params: dict[str, Any] | None) -> dict[str, Any]:
        return {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}

    return {"elicitation/create": elicit}


async def test_initialize_on_one_instance_and_call_on_the_others(example: Cluster) -> None:
    async with RoundRobinClient(example.urls) as c:
        assert c.session_id
        for _ in range(4):
            tools = await c.list_tools()
            assert any(t["name"] == "search" for t in tools)
        await c.request("logging/setLevel", {"level": "info"})  # stored in Redis...
        await c.call_tool("test_tool_with_logging")  # ...and honoured on another instance
        assert len([m for m in c.messages if m["method"] == "notifications/message"]) == 3
        assert len(set(c.sent_to)) == 3
        r = await c.delete_session()
        assert r.status_code == 200
        r = await c.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, c.headers())
        assert r.status_code == 404


async def test_elicitation_answer_posted_to_another_instance(example: Cluster) -> None:
    async with RoundRobinClient(example.urls, capabilities={"elicitation": {}}, handlers=_handlers()) as c:
        r = await c.call_tool("test_elicitation", {"message": "Who are you?"})
        assert "ada@example.com" in r["content"][0]["text"]


async def test_consent_gate_across_instances(example: Cluster) -> None:
    (Path(example.env["MCP_EXAMPLE_SANDBOX"]) / "doomed.txt").write_text("x")
    async with RoundRobinClient(example.urls, era="modern", capabilities={"elicitation": {}}) as c:
        r = await c.call_tool("delete_path", {"path": "doomed.txt"})
        yes = {"confirm": {"action": "accept", "content": {"confirm": True}}}
        r = await c.call_tool("delete_path", {"path": "doomed.txt"}, inputResponses=yes, requestState=r["requestState"])
        assert r["structuredContent"] == {"deleted": "doomed.txt"}


async def test_listen_on_one_instance_sees_a_change_made_on_another(example: Cluster) -> None:
    a, _, c_url = example.urls
    async with McpTestClient(url=c_url, era="modern") as listener, McpTestClient(url=a, era="modern") as actor:
        body = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
            "_meta": listener.envelope(None)["_meta"], "notifications": {"toolsListChanged": True}}}
        h = listener.headers("subscriptions/listen")
        async with listener.http.stream("POST", c_url, content=orjson.dumps(body), headers=h) as resp:
            events = parse_sse(resp.aiter_lines())
            ack = orjson.loads((await asyncio.wait_for(events.__anext__(), 10))["data"])
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            await actor.call_tool("test_trigger_tool_change")
            note = orjson.loads((await asyncio.wait_for(events.__anext__(), 10))["data"])
            assert note["method"] == "notifications/tools/list_changed"
            assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"


async def test_cancel_posted_to_another_instance_cancels_the_handler(streaming: Cluster) -> None:
    a, b = streaming.urls
    async with McpTestClient(url=a) as c:
        call = asyncio.create_task(c.request("tools/call", {"name": "ticker", "arguments": {
            "run": "x", "ticks": 400}}, request_id="long-1"))
        await asyncio.sleep(0.5)
        async with httpx.AsyncClient() as http:
            r = await http.post(b, content=orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                         "params": {"requestId": "long-1", "reason": "stop"}}),
                                headers=c.headers())
            assert r.status_code == 202
        with pytest.raises(McpError) as e:
            await asyncio.wait_for(call, 10)
        assert e.value.code == -32011


async def test_killed_instance_loses_nothing_it_appended(streaming: Cluster) -> None:
    victim, survivor = streaming.urls[0], streaming.urls[1]
    async with McpTestClient(url=victim) as c:
        await c.request("logging/setLevel", {"level": "info"})
        body = orjson.dumps({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                             "params": {"name": "burst", "arguments": {"n": 60}}})
        seen: list[dict[str, Any]] = []
        async with c.http.stream("POST", victim, content=body, headers=c.headers()) as resp:
            events = parse_sse(resp.aiter_lines())
            for _ in range(5):
                seen.append(await asyncio.wait_for(events.__anext__(), 10))
            stream_id = seen[-1]["id"].rsplit("_", 1)[0]
            key = f"{{mcpcore:s:{c.session_id}}}:events"
            for _ in range(200):  # until the victim appended the end of the stream
                entries = await asyncio.to_thread(streaming.xrange, key)
                if any(f.get(b"e") and f.get(b"s") == stream_id.encode() for _, f in entries):
                    break
                await asyncio.sleep(0.02)
            kill(victim)
        resp, events = await McpTestClient.open_stream(_on(c, survivor), headers={"last-event-id": seen[-1]["id"]})
        rest = []
        async for ev in events:
            rest.append(ev)
        await resp.aclose()
    msgs = [orjson.loads(e["data"]) for e in seen + rest if e["data"]]
    lines = [m["params"]["data"]["message"] for m in msgs if m.get("method") == "notifications/message"]
    assert lines == [f"burst {i}" for i in range(60)]  # every event exactly once, in order
    assert msgs[-1]["id"] == 77 and msgs[-1]["result"]["content"][0]["text"] == "burst of 60 done"


def _on(c: McpTestClient, url: str) -> McpTestClient:
    c.url = url
    return c


async def test_redis_restart_gives_503_then_recovers(tmp_path: Path) -> None:
    with cluster(tmp_path, n=2) as cl:
        a, b = cl.urls
        async with McpTestClient(url=a) as c:
            assert await c.list_tools()
            port = cl.redis_url.rsplit(":", 1)[1].split("/")[0]
            cl.redis_proc.send_signal(signal.SIGTERM)
            cl.redis_proc.wait(10)
            statuses = []
            for url in (a, b):
                r = await c.http.post(url, content=orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                                      headers=c.headers())
                statuses.append((r.status_code, r.json()["error"]["code"]))
                ready = await c.http.get(url.rsplit("/mcp", 1)[0] + "/readyz")
                assert ready.status_code == 503 and ready.json()["checks"]["sessions"] != "ok"
            assert statuses == [(503, -32000), (503, -32000)]
            async with redis_again(port):
                r = await c.http.post(a, content=orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
                                      headers=c.headers())
                assert r.status_code == 404  # Redis kept nothing: the session is gone, say so plainly
                for url in (a, b):
                    for _ in range(100):
                        ready = await c.http.get(url.rsplit("/mcp", 1)[0] + "/readyz")
                        if ready.status_code == 200:
                            break
                        await asyncio.sleep(0.1)
                    assert ready.status_code == 200
                async with RoundRobinClient([a, b]) as again:  # recovered, without restarting anything
                    assert await again.list_tools() and await again.list_tools()


async def test_get_stream_follows_subscriptions_made_on_other_instances(example: Cluster) -> None:
    """The GET stream lives on one instance; subscribe and unsubscribe land on others."""
    a, b, c = example.urls
    uri = "test://watched-resource"
    async with RoundRobinClient([b, c]) as rr, McpTestClient(url=c) as actor, \
            rr.http.stream("GET", a, headers=rr.headers()) as resp:
        assert resp.status_code == 200
        events = parse_sse(resp.aiter_lines())

        async def next_note() -> dict[str, Any]:
            while True:
                ev = await asyncio.wait_for(events.__anext__(), 10)
                if ev.get("data"):
                    return dict(orjson.loads(ev["data"]))

        await rr.request("resources/subscribe", {"uri": uri})
        await actor.call_tool("update_watched_resource")
        note = await next_note()
        assert note == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}

        await rr.request("resources/unsubscribe", {"uri": uri})
        await actor.call_tool("update_watched_resource")  # not delivered: unsubscribed elsewhere
        await actor.call_tool("test_trigger_tool_change")
        note = await next_note()
        assert note["method"] == "notifications/tools/list_changed"
