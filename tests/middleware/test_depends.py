"""``Depends``: functions, classes, sync and async, generators with cleanup exactly once (on
success, error and cancellation, counted), sub-dependencies, one value per request, never in a
schema, app-lifetime resources from ``setup``, overrides, and the mistakes refused at definition."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import orjson
import pytest

from mcpcore import ConfigurationError, Context, Depends, McpApp, Settings, input_required, prompt, resource, tool
from mcpcore.testing import McpTestClient, run_tool_contract

from .stdio_pipe import StdioSession

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "modern"]


class Counters:
    def __init__(self) -> None:
        self.c: Counter[str] = Counter()
        self.started = asyncio.Event()

    def __getitem__(self, key: str) -> int:
        return self.c[key]


def build(counters: Counters) -> McpApp:
    """An app whose dependencies count what they open and close."""

    class Db:
        def __init__(self, tenant: str | None) -> None:
            self.tenant = tenant

    async def get_db(ctx: Context) -> AsyncIterator[Db]:
        counters.c["db.open"] += 1
        try:
            yield Db(ctx.tenant_id)
        except Exception as exc:
            counters.c[f"db.saw.{type(exc).__name__}"] += 1
            raise
        except asyncio.CancelledError:
            counters.c["db.saw.cancel"] += 1
            raise
        finally:
            counters.c["db.close"] += 1

    def sync_cursor(db: Annotated[Db, Depends(get_db)]) -> Iterator[str]:
        counters.c["cursor.open"] += 1
        try:
            yield f"cursor on {db.tenant}"
        finally:
            counters.c["cursor.close"] += 1

    class Settings_:
        def __init__(self, ctx: Context, region: str = "eu") -> None:
            counters.c["settings"] += 1
            self.region = region

    async def pool(ctx: Context) -> str:
        return f"pool {ctx.app_state.pool}"

    @tool
    async def query(q: str, db: Annotated[Db, Depends(get_db)], cursor: Annotated[str, Depends(sync_cursor)],
                    again: Annotated[Db, Depends(get_db)], conf: Annotated[Settings_, Depends()],
                    p: Annotated[str, Depends(pool)]) -> str:
        """Query the database."""
        assert db is again  # one value per request
        return f"{q} {db.tenant} {cursor} {conf.region} {p}"

    @tool
    async def failing(db: Annotated[Db, Depends(get_db)]) -> str:
        """Fail after opening the database."""
        raise RuntimeError("broken query")

    @tool
    async def slow(db: Annotated[Db, Depends(get_db)], ctx: Context) -> str:
        """Wait until cancelled."""
        counters.started.set()
        await ctx.report_progress(1)
        await asyncio.sleep(30)
        return "never"

    def fresh() -> object:
        counters.c["fresh"] += 1
        return object()

    @tool
    async def uncached(a: Annotated[object, Depends(fresh, use_cache=False)],
                       b: Annotated[object, Depends(fresh, use_cache=False)]) -> bool:
        """Two fresh values."""
        return a is not b

    @tool
    async def asks(db: Annotated[Db, Depends(get_db)], ctx: Context) -> str:
        """Ask the caller twice; the database stays the one of the request."""
        first = ctx.inputs.accepted("a")
        if first is None:
            return ctx.request_input({"a": input_required.elicit("A?", {"type": "object", "properties": {
                "v": {"type": "string"}}})})
        return f"{first['v']} {db.tenant}"

    @prompt
    def briefing(topic: str, db: Annotated[Db, Depends(get_db)]) -> str:
        """A briefing from the database."""
        return f"{topic} for {db.tenant}"

    @resource("rows://{table}", name="rows", mime_type="text/plain")
    async def rows(table: str, db: Annotated[Db, Depends(get_db)]) -> str:
        """Rows of a table."""
        return f"{table}@{db.tenant}"

    async def setup(app: McpApp) -> AsyncIterator[None]:
        app.state.pool = "P1"
        counters.c["setup.open"] += 1
        yield
        counters.c["setup.close"] += 1

    return McpApp("deps", tools=[query, failing, slow, uncached, asks], prompts=[briefing], resources=[rows],
                  setup=setup, settings=Settings.from_env({}))


@pytest.mark.parametrize("era", ERAS)
async def test_dependencies_fill_parameters_and_stay_out_of_the_schema(era: str) -> None:
    counters = Counters()
    app = build(counters)
    async with McpTestClient(app, era=era) as c:
        tools = {t["name"]: t for t in await c.list_tools()}
        assert tools["query"]["inputSchema"]["properties"] == {"q": {"type": "string"}}
        assert tools["failing"]["inputSchema"]["properties"] == {}
        r = await c.call_tool("query", {"q": "hi"})
        assert r["content"][0]["text"] == "hi default cursor on default eu pool P1"
        assert counters["db.open"] == counters["db.close"] == 1
        assert counters["cursor.open"] == counters["cursor.close"] == 1 and counters["settings"] == 1
        r = await c.call_tool("query", {"q": "hi", "db": "injected?"})
        assert r["isError"]  # a dependency is never an argument
        assert (await c.call_tool("uncached"))["structuredContent"] in (True, {"result": True})
        assert counters["fresh"] == 2
        prompts = await c.request("prompts/list")
        assert prompts["prompts"][0]["arguments"] == [{"name": "topic", "required": True}]
        assert (await c.get_prompt("briefing", {"topic": "sales"}))["messages"][0]["content"]["text"] == \
            "sales for default"
        assert (await c.read_resource("rows://users"))["contents"][0]["text"] == "users@default"
    assert counters["db.open"] == counters["db.close"] == 3  # the refused call resolved nothing
    assert counters["setup.open"] == counters["setup.close"] == 1


@pytest.mark.parametrize("era", ERAS)
async def test_cleanup_runs_once_and_sees_the_handlers_error(era: str) -> None:
    counters = Counters()
    async with McpTestClient(build(counters), era=era) as c:
        r = await c.call_tool("failing")
        assert r["isError"]
    assert counters["db.open"] == counters["db.close"] == 1
    assert counters["db.saw.RuntimeError"] == 1


async def test_cleanup_runs_once_when_a_2025_request_is_cancelled() -> None:
    counters = Counters()
    async with McpTestClient(build(counters)) as c:
        call = asyncio.create_task(c.request("tools/call", {"name": "slow"}, request_id="slow-1"))
        await asyncio.wait_for(counters.started.wait(), 5)
        await c.notify("notifications/cancelled", {"requestId": "slow-1"})
        with pytest.raises(Exception):  # noqa: B017 - the client gets RequestCancelled
            await asyncio.wait_for(call, 5)
        for _ in range(100):
            if counters["db.close"]:
                break
            await asyncio.sleep(0.01)
    assert counters["db.open"] == counters["db.close"] == 1 and counters["db.saw.cancel"] == 1


async def test_cleanup_runs_once_when_a_2026_client_closes_the_stream() -> None:
    counters = Counters()
    async with McpTestClient(build(counters), era="modern") as c:
        params = c.envelope({"name": "slow", "arguments": {}, "_meta": {"progressToken": "p"}})
        body = orjson.dumps({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": params})
        async with c.http.stream("POST", c.url, content=body, headers=c.headers("tools/call", params)) as resp:
            async for line in resp.aiter_lines():
                if "notifications/progress" in line:
                    break
        for _ in range(200):
            if counters["db.close"]:
                break
            await asyncio.sleep(0.01)
    assert counters["db.open"] == counters["db.close"] == 1 and counters["db.saw.cancel"] == 1


async def test_cleanup_runs_once_over_stdio_on_success_error_and_cancellation() -> None:
    counters = Counters()
    async with StdioSession(build(counters)) as s:
        await s.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "t", "version": "1"}})
        r = await s.request("tools/call", {"name": "query", "arguments": {"q": "x"}})
        assert r["result"]["content"][0]["text"].startswith("x default")
        r = await s.request("tools/call", {"name": "failing", "arguments": {}, "_meta": s.modern_meta})
        assert r["result"]["isError"]
        s.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": {"name": "slow", "arguments": {}}})
        await asyncio.wait_for(counters.started.wait(), 5)
        await s.notify("notifications/cancelled", {"requestId": "slow"})
        for _ in range(200):
            if counters["db.close"] == 3:
                break
            await asyncio.sleep(0.01)
    assert counters["db.open"] == counters["db.close"] == 3
    assert counters["db.saw.RuntimeError"] == 1 and counters["db.saw.cancel"] == 1


async def test_a_dependency_is_resolved_once_across_input_rounds() -> None:
    counters = Counters()
    answers = {"elicitation/create": lambda params: {"action": "accept", "content": {"v": "yes"}}}
    async with McpTestClient(build(counters), capabilities={"elicitation": {}}, handlers=answers) as c:
        r = await c.call_tool("asks")
        assert r["content"][0]["text"] == "yes default"
    assert counters["db.open"] == counters["db.close"] == 1


async def test_overrides_replace_a_dependency_for_the_whole_app() -> None:
    counters = Counters()
    app = build(counters)
    original = next(d for name, d in app.registry.tools["failing"].args.deps if name == "db").call

    class FakeDb:
        tenant = "fake"

    async def fake_db() -> AsyncIterator[FakeDb]:
        counters.c["fake.open"] += 1
        yield FakeDb()
        counters.c["fake.close"] += 1

    app.dependency_overrides[original] = fake_db
    async with McpTestClient(app, era="modern") as c:
        r = await c.call_tool("query", {"q": "t"})
        assert r["content"][0]["text"].startswith("t fake cursor on fake")
    assert counters["db.open"] == 0 and counters["fake.open"] == counters["fake.close"] == 1


async def test_run_tool_contract_resolves_dependencies() -> None:
    async def answer() -> int:
        return 42

    @tool
    async def deep(x: int, a: Annotated[int, Depends(answer)]) -> int:
        """Add the answer."""
        return x + a

    r = await run_tool_contract(deep, {"x": 1})
    assert r["structuredContent"] == {"result": 43}


def test_mistakes_are_refused_when_the_definition_is_made() -> None:
    def needs_something(thing: str) -> str:
        return thing

    with pytest.raises(ConfigurationError, match="nothing can fill it"):
        @tool
        async def a(x: Annotated[str, Depends(needs_something)]) -> str:
            """A."""
            return x

    with pytest.raises(ConfigurationError, match="without a dependency"):
        @tool
        async def b(x: Annotated[list[int], Depends()]) -> str:
            """B."""
            return ""

    with pytest.raises(TypeError):
        Depends("not callable")  # type: ignore[arg-type]


def test_a_cycle_is_refused() -> None:
    from mcpcore.definitions.depends import plan_dependency

    def one(x: Any = None) -> None:
        return None

    def two(y: Annotated[Any, Depends(one)]) -> None:
        return None

    one.__annotations__ = {"x": Annotated[Any, Depends(two)]}
    with pytest.raises(ConfigurationError, match="cycle"):
        plan_dependency(Depends(two), None, "tool 't'", "p")


async def test_a_generator_must_yield_exactly_once() -> None:
    from collections.abc import AsyncGenerator

    async def no_yield() -> AsyncGenerator[int, None]:
        if False:  # an async generator that never yields
            yield 1

    async def twice() -> AsyncIterator[int]:
        yield 1
        yield 2

    def sync_no_yield() -> Iterator[int]:
        return
        yield 1  # makes this a generator

    @tool
    async def a(x: Annotated[int, Depends(no_yield)]) -> int:
        """A."""
        return x

    @tool
    async def b(x: Annotated[int, Depends(twice)]) -> int:
        """B."""
        return x

    @tool
    async def c(x: Annotated[int, Depends(sync_no_yield)]) -> int:
        """C."""
        return x

    app = McpApp("yields", tools=[a, b, c], settings=Settings.from_env({}))
    async with McpTestClient(app, era="modern") as client:
        for name in ("a", "b", "c"):
            assert (await client.call_tool(name))["isError"]
