"""A mounted child's own set-up through the parent: its setup hook (run and closed with the
parent), its ``app.state``, its own ``ctx.state`` store, its ``dependency_overrides``, in every way
its definitions run (a call, a dependency, an input round, a task)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from mcpcore import ConfigurationError, Context, Depends, McpApp, Settings, prompt, resource, tool
from mcpcore.storage.memory import MemoryStorage
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def database(ctx: Context) -> str:
    """The child's dependency: what its setup opened."""
    return str(ctx.app_state.db)


class Ok(BaseModel):
    ok: bool


def child_app(events: list[str], *, storage: MemoryStorage | None = None) -> McpApp:
    @tool
    def where(ctx: Context) -> str:
        """The child's app state, seen from its handler."""
        return str(ctx.app_state.db)

    @tool
    async def through_dependency(db: Annotated[str, Depends(database)]) -> str:
        """The child's app state, seen from its dependency."""
        return db

    @tool
    async def remember(ctx: Context, value: str) -> str:
        """Writes ctx.state, then reads it back."""
        await ctx.state.set("k", value)
        return str(await ctx.state.get("k"))

    @tool
    async def confirm(ctx: Context, db: Annotated[str, Depends(database)]) -> str:
        """Asks the caller, then answers with the child's state (after the round)."""
        answer = await ctx.elicit("Sure?", Ok)
        return f"{db}/{answer.data.ok if answer.data else None}/{ctx.app_state.db}"

    @tool(task="required")
    async def report(ctx: Context, db: Annotated[str, Depends(database)]) -> str:
        """A task: its attempt runs later, still with the child's state."""
        await asyncio.sleep(0.01)
        return f"{db}/{ctx.app_state.db}"

    @prompt
    def greeting(ctx: Context) -> str:
        """A prompt seeing the child's state."""
        return f"hello from {ctx.app_state.db}"

    @resource("data://db", mime_type="text/plain")
    def db_name(ctx: Context) -> str:
        """A resource seeing the child's state."""
        return str(ctx.app_state.db)

    def invoices(ctx: Context) -> list[dict[str, str]]:
        return [{"uri": f"data://invoices/{ctx.app_state.db}", "name": "the child's invoice"}]

    @resource("data://invoices/{n}", mime_type="text/plain", list=invoices)
    def invoice(n: str) -> str:
        """One invoice."""
        return n

    async def setup(app: McpApp) -> AsyncIterator[None]:
        events.append("child setup")
        app.state.db = "child-db"
        yield
        events.append("child closed")

    return McpApp("billing", settings=Settings.from_env({}), tools=[where, through_dependency, remember, confirm,
                                                                     report],
                  prompts=[greeting], resources=[db_name, invoice], setup=setup, storage=storage)


def parent_app(child: McpApp, events: list[str], **settings: Any) -> McpApp:
    async def setup(app: McpApp) -> AsyncIterator[None]:
        events.append("parent setup")
        app.state.db = "parent-db"
        yield
        events.append("parent closed")

    app = McpApp("parent", settings=Settings.from_env({}, **settings), setup=setup)
    app.mount(child, namespace="billing")
    return app


async def test_the_childs_setup_runs_with_the_parent_and_closes_after_it() -> None:
    events: list[str] = []
    app = parent_app(child_app(events), events)
    await app.startup()
    assert events == ["child setup", "parent setup"]
    await app.shutdown()
    assert events == ["child setup", "parent setup", "parent closed", "child closed"]


@pytest.mark.parametrize("era", ERAS)
async def test_the_childs_definitions_see_its_app_state_the_parents_their_own(era: str) -> None:
    events: list[str] = []
    app = parent_app(child_app(events), events)

    @app.tool
    def parent_where(ctx: Context) -> str:
        """The parent's own tool."""
        return str(ctx.app_state.db)

    handlers = {"elicitation/create": lambda p: {"action": "accept", "content": {"ok": True}}}
    async with McpTestClient(app, era=era, capabilities={"elicitation": {}}, handlers=handlers) as c:
        c.answers_input_required = True
        assert (await c.call_tool("billing_where"))["content"][0]["text"] == "child-db"
        assert (await c.call_tool("billing_through_dependency"))["content"][0]["text"] == "child-db"
        assert (await c.call_tool("billing_confirm"))["content"][0]["text"] == "child-db/True/child-db"
        assert (await c.call_tool("parent_where"))["content"][0]["text"] == "parent-db"
        got = await c.get_prompt("billing_greeting")
        assert got["messages"][0]["content"]["text"] == "hello from child-db"
        assert (await c.read_resource("data://billing/db"))["contents"][0]["text"] == "child-db"
        assert "data://billing/invoices/child-db" in {r["uri"] for r in await c.list_resources()}  # its list=


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_a_child_task_attempt_sees_the_childs_state(kind: str, request: pytest.FixtureRequest) -> None:
    settings = {} if kind == "memory" else {"session_store": "redis", "storage_provider": "redis",
                                            "redis_url": request.getfixturevalue("redis_url")}
    events: list[str] = []
    app = parent_app(child_app(events), events, **settings)
    async with McpTestClient(app, era="modern", capabilities=TASKS) as c:
        created = await c.call_tool("billing_report")
        assert created["resultType"] == "task", created
        deadline = time.monotonic() + 5
        while (task := await c.request("tasks/get", {"taskId": created["taskId"]}))["status"] == "working":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        assert task["result"]["content"][0]["text"] == "child-db/child-db", task


@pytest.mark.parametrize("era", ERAS)
async def test_a_child_that_declares_its_own_store_keeps_its_ctx_state_there(era: str) -> None:
    events: list[str] = []
    own = MemoryStorage()
    app = parent_app(child_app(events, storage=own), events)

    @app.tool
    async def parent_reads(ctx: Context) -> str:
        """The parent's own ctx.state."""
        return repr(await ctx.state.get("k"))

    async with McpTestClient(app, era=era) as c:
        assert (await c.call_tool("billing_remember", {"value": "v1"}))["content"][0]["text"] == "v1"
        assert (await c.call_tool("parent_reads"))["content"][0]["text"] == "None"  # not the parent's store
    assert own._count == 1  # the child's own store holds it


@pytest.mark.parametrize("era", ERAS)
async def test_a_child_without_a_store_of_its_own_uses_the_parents(era: str) -> None:
    events: list[str] = []
    app = parent_app(child_app(events), events)

    @app.tool
    async def parent_reads(ctx: Context) -> str:
        """The parent's own ctx.state."""
        return str(await ctx.state.get("k"))

    async with McpTestClient(app, era=era) as c:
        await c.call_tool("billing_remember", {"value": "shared"})
        assert (await c.call_tool("parent_reads"))["content"][0]["text"] == "shared"


@pytest.mark.parametrize("era", ERAS)
async def test_dependency_overrides_of_the_child_and_of_the_parent(era: str) -> None:
    events: list[str] = []
    child = child_app(events)
    app = parent_app(child, events)
    async with McpTestClient(app, era=era) as c:
        child.dependency_overrides[database] = lambda: "child-fake"
        assert (await c.call_tool("billing_through_dependency"))["content"][0]["text"] == "child-fake"
        app.dependency_overrides[database] = lambda: "parent-fake"  # the parent's override wins
        assert (await c.call_tool("billing_through_dependency"))["content"][0]["text"] == "parent-fake"
        del child.dependency_overrides[database]
        assert (await c.call_tool("billing_through_dependency"))["content"][0]["text"] == "parent-fake"
        app.dependency_overrides.clear()
        assert (await c.call_tool("billing_through_dependency"))["content"][0]["text"] == "child-db"


async def test_a_child_with_a_setup_hook_cannot_be_mounted_once_the_parent_runs() -> None:
    events: list[str] = []
    app = McpApp("parent", settings=Settings.from_env({}))
    await app.startup()
    try:
        with pytest.raises(ConfigurationError, match="setup hook"):
            app.mount(child_app(events), namespace="billing")
    finally:
        await app.shutdown()


@pytest.mark.parametrize("era", ERAS)
async def test_a_mount_inside_a_mounted_child_carries_its_own_set_up_and_names(era: str) -> None:
    @tool
    async def where(ctx: Context, db: Annotated[str, Depends(database)]) -> str:
        """The grandchild's state, through two mounts."""
        ctx.notify_resource_updated("data://r")
        return f"{ctx.app_state.db}/{db}"

    @resource("data://r", mime_type="text/plain")
    def watched() -> str:
        """Watched."""
        return "r"

    async def setup(app: McpApp) -> None:
        app.state.db = "grand-db"

    grand = McpApp("grand", settings=Settings.from_env({}), tools=[where], resources=[watched], setup=setup)
    child = McpApp("child", settings=Settings.from_env({}), mounts={"g": grand})
    app = McpApp("parent", settings=Settings.from_env({}), mounts={"c": child})
    await app.startup()
    try:
        async with McpTestClient(app, era=era) as c, c.listen(resource_subscriptions=["data://c/g/r"]) as sub:
            assert (await c.call_tool("c_g_where"))["content"][0]["text"] == "grand-db/grand-db"
            assert (await sub.next(5))["params"]["uri"] == "data://c/g/r"  # renamed by both mounts
            await grand.notify.resource_updated("data://r")
            assert (await sub.next(5))["params"]["uri"] == "data://c/g/r"
            child.dependency_overrides[database] = lambda: "child-fake"
            assert (await c.call_tool("c_g_where"))["content"][0]["text"] == "grand-db/child-fake"
            grand.dependency_overrides[database] = lambda: "grand-fake"  # the outer mount's wins
            assert (await c.call_tool("c_g_where"))["content"][0]["text"] == "grand-db/child-fake"
    finally:
        await app.shutdown()
