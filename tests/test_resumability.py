"""The resumable event buffer (memory store): ids, priming, replay of one stream, follow-on."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest

from mcpcore import Context, McpApp, Settings, tool
from mcpcore.testing import McpTestClient, parse_sse

pytestmark = pytest.mark.anyio

GATE: dict[str, asyncio.Event] = {}


@tool
async def chatty(n: int, gate: str, ctx: Context) -> str:
    """Log n lines, waiting for a gate halfway."""
    for i in range(n):
        if i == n // 2 and gate in GATE:
            await GATE[gate].wait()
        ctx.log.info(f"line {i}")
        await asyncio.sleep(0)
    return f"said {n}"


def app(**settings: Any) -> McpApp:
    return McpApp("t", "1", tools=[chatty], settings=Settings.from_env({}, **settings))


def call(rid: int, n: int, gate: str = "") -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                         "params": {"name": "chatty", "arguments": {"n": n, "gate": gate}}})


async def collect(events: Any, until_id: int | None = None, count: int | None = None) -> list[dict[str, Any]]:
    out = []
    async for ev in events:
        out.append(ev)
        if count is not None and len(out) >= count:
            break
        if until_id is not None and ev.get("data") and orjson.loads(ev["data"]).get("id") == until_id:
            break
    return out


async def test_stream_events_have_ids_and_a_priming_event() -> None:
    async with McpTestClient(app(), log_level=None) as c:
        await c.request("logging/setLevel", {"level": "info"})
        async with c.http.stream("POST", c.url, content=call(5, 3), headers=c.headers()) as resp:
            evs = await collect(parse_sse(resp.aiter_lines()), until_id=5)
        assert evs[0]["data"] == "" and evs[0]["retry"] == "1000"
        stream_ids = {e["id"].rsplit("_", 1)[0] for e in evs}
        assert len(stream_ids) == 1
        seqs = [int(e["id"].rsplit("_", 1)[1]) for e in evs]
        assert seqs == sorted(seqs) and len(evs) == 5


async def test_resume_replays_the_rest_of_one_stream_exactly_once() -> None:
    GATE["r1"] = asyncio.Event()
    a = app()
    async with McpTestClient(a) as c:
        await c.request("logging/setLevel", {"level": "info"})
        async with c.http.stream("POST", c.url, content=call(7, 10, "r1"), headers=c.headers()) as resp:
            first = await collect(parse_sse(resp.aiter_lines()), count=4)  # priming + 3 lines, then drop
        GATE["r1"].set()
        other = await c.call_tool("chatty", {"n": 2, "gate": ""})  # another stream of the same session
        assert other["content"][0]["text"] == "said 2"
        resp, events = await c.open_stream(headers={"last-event-id": first[-1]["id"]})
        try:
            rest = await collect(events, until_id=7)
        finally:
            await resp.aclose()
    texts = [orjson.loads(e["data"]) for e in rest]
    lines = [m["params"]["data"]["message"] for m in texts if m.get("method") == "notifications/message"]
    assert lines == [f"line {i}" for i in range(3, 10)]
    assert texts[-1]["result"]["content"][0]["text"] == "said 10"
    assert all(e["id"].rsplit("_", 1)[0] == first[-1]["id"].rsplit("_", 1)[0] for e in rest)


async def test_unknown_last_event_id_replays_nothing_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    async with McpTestClient(app()) as c:
        with caplog.at_level(logging.INFO, logger="mcpcore.transport"):
            resp, events = await c.open_stream(headers={"last-event-id": "feedbeef_999"})
            got = await collect(events)
            await resp.aclose()
        assert got == []
        assert any("unknown or evicted" in r.getMessage() for r in caplog.records)


async def test_standalone_stream_resumes_what_it_missed() -> None:
    a = app()
    async with McpTestClient(a) as c:
        resp, events = await c.open_stream()
        primer = await asyncio.wait_for(events.__anext__(), 5)
        await resp.aclose()
        await asyncio.sleep(0.05)
        await a.notify.tools_changed()  # sent while nobody listens: the GET stream is closed...
        resp, events = await c.open_stream(headers={"last-event-id": primer["id"]})
        try:
            got = await asyncio.wait_for(events.__anext__(), 5)
        finally:
            await resp.aclose()
        assert got["data"] == ""  # ...so there is nothing to replay, only a new priming event


async def test_resumability_off_and_old_revisions() -> None:
    async with McpTestClient(app(resumability=False)) as c:
        await c.request("logging/setLevel", {"level": "info"})
        async with c.http.stream("POST", c.url, content=call(3, 2), headers=c.headers()) as resp:
            evs = await collect(parse_sse(resp.aiter_lines()), until_id=3)
        assert all("id" not in e for e in evs) and evs[0]["data"]
    async with McpTestClient(app(), protocol_version="2025-06-18") as c:
        await c.request("logging/setLevel", {"level": "info"})
        async with c.http.stream("POST", c.url, content=call(4, 2), headers=c.headers()) as resp:
            evs = await collect(parse_sse(resp.aiter_lines()), until_id=4)
        assert evs[0]["data"] and all("id" in e for e in evs)  # ids, but no priming before 2025-11-25


async def test_deleting_a_session_releases_its_buffer() -> None:
    a = app()
    async with McpTestClient(a) as c:
        await c.request("logging/setLevel", {"level": "info"})
        await c.call_tool("chatty", {"n": 2, "gate": ""})
        assert c.session_id in a.events._sessions
        await c.delete_session()
        assert c.session_id not in a.events._sessions
