"""The common requests' short ways (issue 26) answer exactly as the general way does: the
session-or-envelope layer's one-pass recognition of a 2026-07-28 request, the verbatim header
comparison in its place of check_headers, and the dispatcher's inline call of a plain tool."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcpcore import Context, McpApp, tool
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio

PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
META = {PV: "2026-07-28", CC: {}}


@tool
async def echo(text: str) -> str:
    """Return the text."""
    return text


@tool
async def fails(text: str) -> str:
    """Fail with the text."""
    raise ValueError(text)


@tool
async def with_ctx(text: str, ctx: Context) -> str:
    """Return the text (takes a Context: never inline)."""
    return text


def app() -> McpApp:
    return McpApp("common", "1.0", tools=[echo, fails, with_ctx])


def headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
         "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if name is not None:
        h["mcp-name"] = name
    h.update(extra)
    return h


async def post(c: McpTestClient, body: Any, h: dict[str, str]) -> tuple[int, Any]:
    r = await c.post(body, h)
    return r.status_code, r.json()


def without_request_ids(value: Any) -> Any:
    """``value`` without its ``requestId`` fields (drawn afresh for every request with a number id)."""
    if isinstance(value, dict):
        return {k: without_request_ids(v) for k, v in value.items() if k != "requestId"}
    if isinstance(value, (list, tuple)):
        return [without_request_ids(v) for v in value]
    return value


def call(name: str, args: Any, rid: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": args, "_meta": META}}


async def test_a_plain_tool_answers_the_same_on_every_call() -> None:
    """The first call takes the general way (and teaches the dispatcher the tool), later ones the
    inline way: results, tool errors and bad arguments alike."""
    async with McpTestClient(app(), era="modern") as c:
        for name, args in (("echo", {"text": "hi"}), ("fails", {"text": "boom"}), ("echo", {"text": 3}),
                           ("echo", {"text": "hi", "extra": 1}), ("echo", ["not", "an", "object"]),
                           ("with_ctx", {"text": "hi"})):
            answers = [without_request_ids(await post(c, call(name, args), headers("tools/call", name)))
                       for _ in range(3)]
            assert answers[0] == answers[1] == answers[2], (name, args, answers)
        status, r = answers[0]
        assert status == 200 and r["result"]["structuredContent"] == "hi"
        status, r = await post(c, call("fails", {"text": "boom"}), headers("tools/call", "fails"))
        assert status == 200 and r["result"]["isError"] is True
        assert r["result"]["_meta"]["dev.mcpcore/error"]["data"]["requestId"]


async def test_unhashable_or_odd_envelopes_take_the_general_way() -> None:
    """Values the one-pass recognition cannot look up (a list as method or version) or does not
    take (an id of the wrong type, a bool id, extra envelope fields) get the general answers."""
    async with McpTestClient(app(), era="modern") as c:
        status, r = await post(c, {"jsonrpc": "2.0", "id": 1, "method": ["tools/call"], "params": {"_meta": META}},
                               headers("tools/call"))
        assert status == 400 and r["error"]["code"] == -32600
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {PV: ["2026-07-28"], CC: {}}}}
        status, r = await post(c, body, headers("tools/list"))
        assert status == 400 and r["error"]["code"] == -32602
        for rid in (True, 1.5, None, "x" * 300):
            status, r = await post(c, {**call("echo", {"text": "hi"}), "id": rid}, headers("tools/call", "echo"))
            assert status == 400 and r["error"]["code"] == -32600, rid
        body = call("echo", {"text": "hi"})
        body["params"]["_meta"] = {**META, "progressToken": 7}
        status, r = await post(c, body, headers("tools/call", "echo"))
        assert status == 200 and r["result"]["content"][0]["text"] == "hi"
        status, r = await post(c, {**call("echo", {"text": "hi"}), "jsonrpc": "1.0"}, headers("tools/call", "echo"))
        assert status == 400 and r["error"]["code"] == -32600


async def test_headers_that_are_not_verbatim_are_checked_as_before() -> None:
    async with McpTestClient(app(), era="modern") as c:
        for _ in range(2):
            status, r = await post(c, call("echo", {"text": "hi"}), headers("tools/call", "other"))
            assert status == 400 and r["error"]["code"] == -32020
            status, r = await post(c, call("echo", {"text": "hi"}), headers("tools/call"))
            assert status == 400 and r["error"]["code"] == -32020 and "missing Mcp-Name" in r["error"]["message"]
            status, r = await post(c, call("echo", {"text": "hi"}), headers("tools/list", "echo"))
            assert status == 400 and r["error"]["code"] == -32020
            status, r = await post(c, call("echo", {"text": "hi"}),
                                   headers("tools/call", "echo", **{"mcp-protocol-version": "2025-11-25"}))
            assert status == 400 and r["error"]["code"] == -32020
            status, r = await post(c, call("echo", {"text": "hi"}), headers("tools/call", "echo "))
            assert status == 200 and r["result"]["content"][0]["text"] == "hi"  # decoded and compared, stripped
        status, r = await post(c, call("echo", {"text": "hi"}), headers("tools/call", "=?base64?ZWNobw==?="))
        assert status == 200 and r["result"]["content"][0]["text"] == "hi"


async def test_a_2025_request_without_params_or_envelope_is_its_sessions() -> None:
    async with McpTestClient(app(), era="legacy") as c:
        assert (await c.request("tools/list"))["tools"]
        r = await c.post({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert r.status_code == 200 and orjson.loads(r.content) == {"jsonrpc": "2.0", "id": 5, "result": {}}
        r = await c.post({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": [1]})
        assert r.status_code == 400 and r.json()["error"]["code"] == -32602


async def test_a_replaced_tool_or_telemetry_turned_on_is_not_inlined_stale() -> None:
    """What the dispatcher learnt about a tool is forgotten when the registry changes; telemetry
    turned on later is honoured on the next call."""
    mcp = app()
    async with McpTestClient(mcp, era="modern") as c:
        for _ in range(2):
            status, r = await post(c, call("echo", {"text": "hi"}), headers("tools/call", "echo"))
            assert status == 200 and r["result"]["content"][0]["text"] == "hi"

        @tool(name="echo")
        async def shout(text: str) -> str:
            """Shout the text."""
            return text.upper()

        assert mcp.remove_tool("echo")
        mcp.include(shout)
        for _ in range(2):
            status, r = await post(c, call("echo", {"text": "hi"}), headers("tools/call", "echo"))
            assert status == 200 and r["result"]["content"][0]["text"] == "HI"
        seen: list[str] = []

        class Spy:
            def tool_call(self, target: str, req: Any) -> Any:
                import contextlib

                seen.append(target)
                return contextlib.nullcontext(lambda failed: None)

        mcp.dispatcher.telemetry = Spy()  # type: ignore[assignment]
        status, r = await post(c, call("echo", {"text": "hi"}), headers("tools/call", "echo"))
        assert status == 200 and r["result"]["content"][0]["text"] == "HI" and seen == ["echo"]


async def test_a_tool_with_dependencies_under_middleware_answers_the_same_on_every_call() -> None:
    """Under middleware, a tool with a dependency is invoked by the innermost layer after its
    first call: results, bad arguments and a failing dependency answer as the first call did."""
    from typing import Annotated

    from mcpcore import Call, CallNext, Depends, Middleware

    class Pass(Middleware):
        async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
            return await call_next(call)

    async def prefix() -> str:
        return "> "

    async def broken() -> str:
        raise RuntimeError("no database")

    @tool
    async def quote(text: str, p: Annotated[str, Depends(prefix)]) -> str:
        """Quote the text."""
        return p + text

    @tool
    async def needs_db(text: str, db: Annotated[str, Depends(broken)]) -> str:
        """Never runs."""
        return text

    mcp = McpApp("deps", "1.0", tools=[quote, needs_db], middleware=[Pass()])
    async with McpTestClient(mcp, era="modern") as c:
        for name, args in (("quote", {"text": "hi"}), ("quote", {"text": 3}), ("quote", {"nope": 1}),
                           ("needs_db", {"text": "hi"})):
            answers = [without_request_ids(await post(c, call(name, args), headers("tools/call", name)))
                       for _ in range(3)]
            assert answers[0] == answers[1] == answers[2], (name, args, answers)
        status, r = await post(c, call("quote", {"text": "hi"}), headers("tools/call", "quote"))
        assert status == 200 and r["result"]["content"][0]["text"] == "> hi"
        status, r = await post(c, call("needs_db", {"text": "hi"}), headers("tools/call", "needs_db"))
        assert status == 200 and r["result"]["isError"] is True
