"""tools/call: arguments, structured output, content, enrichment, error contracts."""

from __future__ import annotations

import logging
import threading
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from mcpcore import (
    ConfigurationError,
    Context,
    ErrorContract,
    JsonRpcErrorCode,
    McpApp,
    McpError,
    Settings,
    ToolResult,
    tool,
)
from mcpcore.errors import ERROR_CONTRACT_META, TOOL_ERROR_META
from mcpcore.testing import McpTestClient, create_mock_context, tool_error

from .conftest import example_app
from .connect import Connect

pytestmark = pytest.mark.anyio


def app_with(*tools: Any) -> McpApp:
    return McpApp("t", "1", tools=tools, settings=Settings.from_env({}))


async def test_scalar_results_are_wrapped_and_rendered_as_text() -> None:
    @tool
    def double(n: int) -> int:
        """Double."""
        return n * 2

    @tool
    def greet(name: str) -> str:
        """Greet."""
        return f"hi {name}"

    async with McpTestClient(app_with(double, greet)) as c:
        r = await c.call_tool("double", {"n": 21})
        assert r == {"content": [{"type": "text", "text": "42"}], "structuredContent": {"result": 42}}
        r = await c.call_tool("greet", {"name": "ann"})
        assert r["content"] == [{"type": "text", "text": "hi ann"}]
        assert r["structuredContent"] == {"result": "hi ann"}


async def test_model_results_are_structured_and_json_text() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.call_tool("fetch_items", {"ids": ["1", "2"]})
        assert r["structuredContent"] == {"items": ["red widget", "blue widget"]}
        assert r["content"][0]["text"] == '{"items":["red widget","blue widget"]}'
        assert "isError" not in r


async def test_unknown_arguments_are_named_and_client_artifacts_ignored() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.call_tool("search", {"query": "red", "colour": "x", "zz": 1})
        assert r["isError"] is True
        err = tool_error(r)
        assert err["code"] == -32602 and "colour, zz" in err["message"]
        assert err["data"]["reason"] == "invalid_arguments"
        assert r["content"][0]["text"].startswith("Error: Unknown argument(s): colour, zz.")
        assert "\n\nRecovery: " in r["content"][0]["text"]
        r = await c.call_tool("search", {"query": "red", "_meta": {"x": 1}, "_trace": "abc"})
        assert "isError" not in r


async def test_invalid_arguments_are_an_error_result_naming_the_field() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.call_tool("search", {"query": "red", "limit": 500})
        assert r["isError"] is True
        err = tool_error(r)
        assert err["data"]["issues"][0]["path"] == "limit"
        assert "limit" in err["message"]
        r = await c.call_tool("search", {})
        assert r["isError"] and tool_error(r)["data"]["issues"][0]["path"] == "query"
        r = await c.request("tools/call", {"name": "search", "arguments": [1, 2]})
        assert r["isError"] and "must be an object" in r["content"][0]["text"]


async def test_unknown_tool_is_a_json_rpc_error() -> None:
    async with McpTestClient(example_app()) as c:
        with pytest.raises(McpError) as e:
            await c.call_tool("nope")
        assert e.value.code == -32602 and "Unknown tool: nope" in e.value.message
        assert "requestId" in e.value.data


async def test_enrichment_reaches_structured_content_and_the_trailer() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.call_tool("search", {"query": "Red  Widget"})
        assert r["structuredContent"] == {"items": ["red widget"], "effectiveQuery": "red widget", "totalCount": 1}
        assert r["content"][0]["text"] == '{"items":["red widget"]}'
        assert r["content"][1]["text"] == "Query: red widget\n**1 total**"
        r = await c.call_tool("search", {"query": "purple"})
        assert r["structuredContent"]["notice"] == 'No matches for "purple". Try fewer words.'
        assert r["content"][1]["text"] == 'Query: purple\n**0 total**\n> No matches for "purple". Try fewer words.'


async def test_a_tool_error_carries_no_structured_content_and_its_envelope_in_meta(connect: Connect) -> None:
    # Clients that check structuredContent against the outputSchema even on isError (TypeScript
    # SDK 1.x, the Inspector) would throw on an envelope there; every tool here has an outputSchema.
    async with connect(example_app()) as c:
        tools = {t["name"]: t for t in await c.list_tools()}
        for name, args in [("fetch_items", {"ids": ["99"]}), ("search", {}), ("search", {"query": "a", "x": 1}),
                           ("search", {"query": "a", "limit": "many"}), ("test_error_handling", {})]:
            assert "outputSchema" in tools[name]
            r = await c.call_tool(name, args)
            assert r["isError"] is True and "structuredContent" not in r, (name, r)
            envelope = r["_meta"][TOOL_ERROR_META]
            assert envelope == tool_error(r) and envelope["data"]["requestId"]
            assert r["content"] == [{"type": "text", "text": r["content"][0]["text"]}]
            assert r["content"][0]["text"].startswith(f"Error: {envelope['message']}")
            hint = (envelope["data"].get("recovery") or {}).get("hint")
            assert hint is None or r["content"][0]["text"].endswith(f"\n\nRecovery: {hint}")
            if c.way == "http-2026":
                assert r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpcore-everything"
        ok = await c.call_tool("fetch_items", {"ids": ["1"]})
        assert ok["structuredContent"] == {"items": ["red widget"]} and tool_error(ok) is None


async def test_every_argument_issue_is_in_the_error_text() -> None:
    class Point(BaseModel):
        x: int
        y: int

    @tool
    def plot(point: Annotated[Point, Field(description="Where")]) -> str:
        """Doc."""
        return "ok"

    async with McpTestClient(app_with(plot)) as c:
        r = await c.call_tool("plot", {"point": {"x": "a", "y": "b"}})
        text = r["content"][0]["text"]
        assert text.startswith("Error: Invalid arguments: point.x: ")
        assert "\n- point.x: " in text and "\n- point.y: " in text
        assert text.endswith("\n\nRecovery: Check the tool's inputSchema and call it again with corrected arguments.")
        assert [i["path"] for i in tool_error(r)["data"]["issues"]] == ["point.x", "point.y"]


async def test_required_enrichment_left_unset_fails_loudly() -> None:
    class Enr(BaseModel):
        totalCount: int

    @tool(enrichment=Enr)
    def lazy() -> str:
        """Forgets to enrich."""
        return "x"

    async with McpTestClient(app_with(lazy)) as c:
        r = await c.call_tool("lazy")
        assert r["isError"] is True
        error = tool_error(r)
        assert error["code"] == -32603 and error["data"]["reason"] == "invalid_output"  # the server's fault
        assert "totalCount" in error["message"]


async def test_enrichment_is_a_no_op_without_a_block_and_trailer_renders_all_kinds() -> None:
    class Enr(BaseModel):
        notice: str | None = None
        totalCount: int | None = None
        score: dict[str, int] | None = None
        truncated: bool | None = None
        shown: int | None = None
        cap: int | None = None
        price: dict[str, int] | None = None

    @tool(enrichment=Enr, enrichment_trailer={"score": {"render": lambda v: f"score={v['a']}"}})
    def rich(ctx: Context) -> list[str]:
        """Enrich everything."""
        ctx.enrich.total(3)
        ctx.enrich(score={"a": 1})
        ctx.enrich.delta("price", 1, 2)
        ctx.enrich.truncated(shown=2, cap=2)
        return ["a", "b"]

    @tool
    def plain(ctx: Context) -> str:
        """No block."""
        ctx.enrich.notice("ignored")
        return "ok"

    async with McpTestClient(app_with(rich, plain)) as c:
        r = await c.call_tool("rich")
        s = r["structuredContent"]
        assert s["result"] == ["a", "b"] and s["truncated"] is True and s["price"] == {"before": 1, "after": 2}
        trailer = r["content"][1]["text"]
        assert "**3 total**" in trailer and "score=1" in trailer and "**price:** 1 → 2" in trailer
        assert "> Showing 2 results (capped at 2)" in trailer
        r = await c.call_tool("plain")
        assert r == {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"result": "ok"}}


async def test_collected_content_is_prepended_and_dropped_on_error() -> None:
    @tool
    def fails(ctx: Context) -> str:
        """Collects an image, then fails."""
        ctx.content.image(b"\x89PNG", "image/png")
        raise ValueError("bad input")

    async with McpTestClient(app_with(fails)) as c:
        r = await c.call_tool("fails")
        assert r["isError"] is True and len(r["content"]) == 1
        assert tool_error(r)["code"] == -32007
    async with McpTestClient(example_app()) as c:
        r = await c.call_tool("render_chart", {"series": [1, 2, 3]})
        assert r["content"][0]["type"] == "image" and r["content"][0]["mimeType"] == "image/png"
        assert r["content"][1] == {"type": "text", "text": '{"points":3}'}
        assert r["structuredContent"] == {"points": 3}


async def test_error_contracts_fill_the_recovery_hint_and_keep_the_code() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.call_tool("fetch_items", {"ids": ["99"]})
        err = tool_error(r)
        assert err["code"] == int(JsonRpcErrorCode.NotFound)
        assert err["message"] == "No items match 1 ids"
        assert err["data"]["reason"] == "no_match" and err["data"]["ids"] == ["99"]
        assert err["data"]["recovery"] == {"hint": "Broaden the query or check the spelling and try again."}
        assert "requestId" in err["data"]
        assert r["content"][0]["text"] == ("Error: No items match 1 ids\n\nRecovery: Broaden the query or check "
                                           "the spelling and try again.")
        r = await c.call_tool("fetch_items", {"ids": [str(i) for i in range(20)]})
        err = tool_error(r)
        assert err["code"] == int(JsonRpcErrorCode.RateLimited) and err["message"] == "Local queue at capacity"
        assert err["data"]["retryable"] is True


async def test_fail_with_an_undeclared_reason_is_loud_and_recovery_for_resolves() -> None:
    seen: dict[str, Any] = {}

    @tool(errors=[ErrorContract("busy", -32003, "Busy", "Wait a little and then try again please.")])
    def t(ctx: Context) -> str:
        """Doc."""
        seen["hint"] = ctx.recovery_for("busy")
        seen["none"] = ctx.recovery_for("other")
        raise ctx.fail("typo")

    async with McpTestClient(app_with(t)) as c:
        r = await c.call_tool("t")
        err = tool_error(r)
        assert err["code"] == -32603 and err["data"]["declaredReasons"] == ["busy"]
        assert seen == {"hint": {"recovery": {"hint": "Wait a little and then try again please."}}, "none": {}}


async def test_fail_is_absent_on_a_tool_without_an_error_contract(caplog: pytest.LogCaptureFixture) -> None:
    seen: dict[str, Any] = {}

    @tool
    def plain(ctx: Context) -> str:
        """Doc."""
        seen["has_fail"] = hasattr(ctx, "fail")
        raise ctx.fail("anything")

    with caplog.at_level(logging.ERROR, logger="mcpcore.server"):
        async with McpTestClient(app_with(plain)) as c:
            err = tool_error(await c.call_tool("plain"))
    assert seen == {"has_fail": False}
    assert err["code"] == -32603 and err["message"] == "Internal error."
    (record,) = [r for r in caplog.records if r.exc_info]
    assert isinstance(record.exc_info[1], AttributeError)  # type: ignore[index]
    assert str(record.exc_info[1]).startswith(  # type: ignore[index]
        "ctx.fail is absent: tool:plain declares no errors=[...]; declare ErrorContract entries")

    with pytest.raises(AttributeError, match=r"ctx\.fail is absent"):
        create_mock_context().fail("busy")
    busy = ErrorContract("busy", -32003, "Busy", "Wait a little and then try again please.")
    assert create_mock_context(errors=[busy]).fail("busy").code == -32003


async def test_the_error_contract_is_advertised_in_the_tools_meta(connect: Connect) -> None:
    contracts = [ErrorContract("no_match", JsonRpcErrorCode.NotFound, "Nothing matched",
                               "Broaden the query or check the spelling."),
                 ErrorContract("busy", JsonRpcErrorCode.RateLimited, "Busy", "Wait a little and then try again.",
                               retryable=True)]

    @tool(errors=contracts, meta={"team": "search"})
    def find(query: str, ctx: Context) -> str:
        """Find things."""
        raise ctx.fail("busy")

    @tool
    def plain() -> str:
        """Doc."""
        return "x"

    async with connect(app_with(find, plain)) as c:
        tools = {t["name"]: t for t in await c.list_tools()}
        thrown = tool_error(await c.call_tool("find", {"query": "q"}))
    assert tools["find"]["_meta"] == {"team": "search", ERROR_CONTRACT_META: [
        {"reason": "no_match", "code": -32001, "when": "Nothing matched",
         "recovery": "Broaden the query or check the spelling."},
        {"reason": "busy", "code": -32003, "when": "Busy", "recovery": "Wait a little and then try again.",
         "retryable": True}]}
    assert "_meta" not in tools["plain"]
    advertised = {e["reason"]: e["code"] for e in tools["find"]["_meta"][ERROR_CONTRACT_META]}
    assert thrown["code"] == advertised[thrown["data"]["reason"]]


def test_the_error_contract_meta_key_is_reserved() -> None:
    with pytest.raises(ConfigurationError, match=r"meta key 'dev\.mcpcore/errors' is mcpcore's"):
        @tool(errors=[ErrorContract("busy", -32003, "Busy", "Wait a little and then try again.")],
              meta={ERROR_CONTRACT_META: []})
        def t() -> str:
            """Doc."""
            return "x"


async def test_service_errors_with_a_declared_reason_get_the_hint_and_own_hints_win() -> None:
    contract = [ErrorContract("upstream_down", -32000, "Upstream down", "Retry in a minute or check status page.")]

    @tool(errors=contract)
    def t1() -> str:
        """Doc."""
        raise McpError(-32000, "db down", {"reason": "upstream_down"})

    @tool(errors=contract)
    def t2() -> str:
        """Doc."""
        raise McpError(-32000, "db down", {"reason": "upstream_down", "recovery": {"hint": "custom"}})

    async with McpTestClient(app_with(t1, t2)) as c:
        r = await c.call_tool("t1")
        assert tool_error(r)["data"]["recovery"]["hint"].startswith("Retry in a minute")
        r = await c.call_tool("t2")
        assert tool_error(r)["data"]["recovery"] == {"hint": "custom"}


async def test_unexpected_exceptions_leak_nothing() -> None:
    @tool
    def boom() -> str:
        """Doc."""
        raise RuntimeError("secret at /etc/shadow line 3")

    @tool
    def path_err() -> str:
        """Doc."""
        raise ValueError("cannot open /srv/app/config/secrets.yaml")

    async with McpTestClient(app_with(boom, path_err)) as c:
        r = await c.call_tool("boom")
        assert r["content"][0]["text"] == "Error: Internal error."
        assert "shadow" not in str(r)
        r = await c.call_tool("path_err")
        assert "/srv" not in str(r) and "secrets" not in str(r) and "Invalid value." in r["content"][0]["text"]


async def test_output_that_breaks_the_declared_type_is_an_error() -> None:
    @tool
    def liar() -> int:
        """Doc."""
        return "not a number"  # type: ignore[return-value]

    async with McpTestClient(app_with(liar)) as c:
        r = await c.call_tool("liar")
        assert r["isError"] and tool_error(r)["data"]["reason"] == "invalid_output"


async def test_sync_tools_run_in_a_worker_thread_and_can_log() -> None:
    threads: list[str] = []

    @tool
    def blocking(ctx: Context) -> str:
        """Doc."""
        threads.append(threading.current_thread().name)
        ctx.log.info("from a thread")
        ctx.notify_tool_list_changed()
        return "done"

    async with McpTestClient(app_with(blocking)) as c:
        r = await c.call_tool("blocking")
        assert r["structuredContent"] == {"result": "done"}
        assert threads and threads[0] != threading.main_thread().name
        methods = [m["method"] for m in c.messages]
        assert "notifications/message" in methods and "notifications/tools/list_changed" in methods


async def test_tool_result_escape_hatch_and_unstructured_tools() -> None:
    @tool
    def custom() -> ToolResult:
        """Doc."""
        return ToolResult(content=[{"type": "text", "text": "x"}], structuredContent={"a": 1}, isError=True)

    @tool(structured=False)
    def loose() -> dict[str, int]:
        """Doc."""
        return {"a": 1}

    @tool(format=lambda r: [{"type": "text", "text": f"{len(r)} rows"}])
    def formatted() -> list[int]:
        """Doc."""
        return [1, 2, 3]

    async with McpTestClient(app_with(custom, loose, formatted)) as c:
        assert await c.call_tool("custom") == {"content": [{"type": "text", "text": "x"}],
                                               "structuredContent": {"a": 1}, "isError": True}
        assert await c.call_tool("loose") == {"content": [{"type": "text", "text": '{"a":1}'}]}
        r = await c.call_tool("formatted")
        assert r["content"] == [{"type": "text", "text": "3 rows"}] and r["structuredContent"] == {"result": [1, 2, 3]}
        tools = {t["name"]: t for t in await c.list_tools()}
        assert "outputSchema" not in tools["loose"] and "outputSchema" not in tools["custom"]


async def test_list_pagination_and_bad_cursor() -> None:
    tools = []
    for i in range(5):
        def f() -> None:
            """Doc."""
        tools.append(tool(name=f"t{i}")(f))
    app = McpApp("t", "1", tools=tools, settings=Settings.from_env({}, list_page_size=2))
    async with McpTestClient(app) as c:
        names, cursor = [], None
        while True:
            r = await c.request("tools/list", {"cursor": cursor} if cursor else {})
            names += [t["name"] for t in r["tools"]]
            cursor = r.get("nextCursor")
            if not cursor:
                break
        assert names == ["t0", "t1", "t2", "t3", "t4"]
        with pytest.raises(McpError) as e:
            await c.request("tools/list", {"cursor": "garbage!"})
        assert e.value.code == -32602


async def test_tool_list_changes_are_visible_at_once() -> None:
    @tool
    def a() -> None:
        """Doc."""

    @tool
    def b() -> None:
        """Doc."""

    app = app_with(a)
    async with McpTestClient(app) as c:
        assert [t["name"] for t in await c.list_tools()] == ["a"]
        app.include(b)
        assert [t["name"] for t in await c.list_tools()] == ["a", "b"]
        app.remove_tool("a")
        assert [t["name"] for t in await c.list_tools()] == ["b"]


async def test_many_arguments_types_validate() -> None:
    class Opt(BaseModel):
        flag: bool = False

    @tool
    def typed(n: Annotated[int, Field(ge=0)], items: list[str], opt: Opt | None = None) -> dict[str, Any]:
        """Doc."""
        return {"n": n, "items": items, "flag": opt.flag if opt else None}

    async with McpTestClient(app_with(typed)) as c:
        r = await c.call_tool("typed", {"n": 1, "items": ["x"], "opt": {"flag": True}})
        assert r["structuredContent"] == {"n": 1, "items": ["x"], "flag": True}
        r = await c.call_tool("typed", {"n": -1, "items": []})
        assert r["isError"]


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_the_short_shaping_of_scalar_tools_is_the_general_one(era: str) -> None:
    """A tool returning ``str``, ``int`` or ``bool`` is shaped by the short way its pipeline chose,
    with the same result as the general path in both eras (wrapped and unwrapped); a value of
    another type goes the general way (and its output check)."""
    from mcpcore.context import Inbound
    from mcpcore.definitions.tools import TOOL_ATTR
    from mcpcore.protocol.versions import Era
    from mcpcore.server.invoke import pipeline_of
    from mcpcore.server.tools import TOOLS

    @tool
    async def text() -> str:
        """Text."""
        return "x"

    @tool
    async def number() -> int:
        """A number."""
        return 1

    @tool
    async def flag() -> bool:
        """A flag."""
        return True

    req = Inbound("tools/call", 1, Era.MODERN if era == "modern" else Era.LEGACY)
    for fn, values in ((text, ["hello", ""]), (number, [0, 42, -7]), (flag, [True, False])):
        d = getattr(fn, TOOL_ATTR)
        for unwrapped in (False, True):  # True: a tool whose 2026-07-28 result is the bare value
            d.unwrapped = unwrapped
            d.pipeline = None
            pipe = pipeline_of(TOOLS, d)
            assert pipe.shape.__name__ == "shape"  # the short way was chosen
            for value in values:
                assert pipe.shape(value, None, req, d.name) == TOOLS.shape(d, value, None, req, d.name)
    d = getattr(number, TOOL_ATTR)
    with pytest.raises(McpError):  # a str from an int tool: the general path's output check
        pipeline_of(TOOLS, d).shape("not a number", None, req, d.name)
