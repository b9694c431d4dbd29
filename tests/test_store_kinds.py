"""Store kinds are chosen in one registry (``mcpcore/store_kinds.py``): the settings name a
kind, its names are checked there, your own kind is registered once and named by the same
settings, and a session store or ``ctx.state`` provider handed to the app is the one every
part uses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcpcore import Context, McpApp, Settings, tool
from mcpcore.errors import ConfigurationError
from mcpcore.serving import check_shared_store
from mcpcore.sessions.memory import MemorySessionStore
from mcpcore.storage import MemoryStorage, create_provider
from mcpcore.store_kinds import _KINDS, _NAMES, StoreKind, register_store_kind, store_kind, store_kinds
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio


@tool
async def remember(text: str, ctx: Context) -> str:
    """Keep ``text`` in ctx.state and read it back."""
    await ctx.state.set("last", text)
    return str(await ctx.state.get("last"))


async def _keys(provider: MemoryStorage) -> list[str]:
    return [k for tenant in list(provider._tenants) for k, _ in (await provider.list(tenant, "", None, 10))[0]]


@pytest.fixture
def registry_restored() -> Iterator[None]:
    kinds, names = dict(_KINDS), dict(_NAMES)
    yield
    _KINDS.clear()
    _KINDS.update(kinds)
    _NAMES.clear()
    _NAMES.update(names)


def test_each_part_lists_the_kinds_that_build_it() -> None:
    assert store_kinds("state") == ["memory", "redis", "filesystem"]
    assert store_kinds("sessions") == ["memory", "redis"]
    assert store_kind("state", "In-Memory").name == "memory"  # an alias, any case
    assert store_kind("state", "fs").name == "filesystem"
    assert store_kind("sessions", "redis").shared and not store_kind("sessions", "memory").shared


def test_a_name_no_kind_builds_is_refused_with_the_kinds_that_do() -> None:
    with pytest.raises(ConfigurationError, match=r"^MCP_SESSION_STORE must be one of memory, redis; got 'filesystem'$"):
        McpApp("x", settings=Settings.from_env({"MCP_SESSION_STORE": "filesystem"}))
    with pytest.raises(ConfigurationError,
                       match=r"^STORAGE_PROVIDER_TYPE must be one of memory, redis, filesystem; got 'sqlite'$"):
        McpApp("x", settings=Settings.from_env({"STORAGE_PROVIDER_TYPE": "sqlite"}))
    with pytest.raises(ConfigurationError, match="STORAGE_PROVIDER_TYPE must be one of"):
        create_provider(Settings.from_env({"STORAGE_PROVIDER_TYPE": "nope"}))


def test_a_kind_cannot_take_another_kinds_name(registry_restored: None) -> None:
    with pytest.raises(ConfigurationError, match="'fs' is already kind 'filesystem'"):
        register_store_kind(StoreKind("files", aliases=("fs",), state=lambda s: MemoryStorage()))


async def test_a_registered_kind_is_named_by_the_setting(registry_restored: None) -> None:
    built: list[MemoryStorage] = []

    def build(settings: Settings) -> MemoryStorage:
        built.append(MemoryStorage(max_entries=settings.storage_max_entries))
        return built[-1]

    register_store_kind(StoreKind("mine", state=build))
    app = McpApp("x", tools=[remember], settings=Settings.from_env({"STORAGE_PROVIDER_TYPE": "mine"}))
    async with McpTestClient(app) as c:
        assert (await c.call_tool("remember", {"text": "hi"}))["content"][0]["text"] == "hi"
    assert len(built) == 1 and await _keys(built[0]) == ["last"]
    assert store_kinds("state")[-1] == "mine" and store_kinds("sessions") == ["memory", "redis"]


async def test_a_given_session_store_is_the_one_every_part_uses() -> None:
    mine = MemorySessionStore(idle_ms=60_000, max_sessions=5, max_per_identity=5)
    app = McpApp("x", tools=[remember], session_store=mine, settings=Settings.from_env({}))
    assert app.sessions is mine and app.stores.sessions is mine and app.dispatcher.core.sessions is mine
    assert app._runtime.sessions is mine and app._runtime.stdio().sessions is mine
    async with McpTestClient(app) as c:  # a 2025-era session: initialize stores it
        await c.call_tool("remember", {"text": "x"})
        assert c.session_id is not None and await mine.get(c.session_id) is not None
        assert app.stores.sessions_active() == 1
    assert mine.on_evict == app.stores.on_session_gone


async def test_a_given_provider_is_ctx_state() -> None:
    mine = MemoryStorage()
    app = McpApp("x", tools=[remember], storage=mine,
                 settings=Settings.from_env({"STORAGE_PROVIDER_TYPE": "filesystem"}, storage_path=" "))
    assert app.stores.state_kind is None  # the setting's kind is not built, nor checked
    async with McpTestClient(app) as c:
        await c.call_tool("remember", {"text": "kept"})
    assert await _keys(mine) == ["last"]


def test_the_shared_store_check_asks_the_kind() -> None:
    check_shared_store(Settings.from_env({"MCP_SESSION_STORE": "redis", "REDIS_URL": "redis://x"}), 4)
    with pytest.raises(ConfigurationError, match="MCP_REQUIRE_SHARED_STORE=true but MCP_SESSION_STORE=memory"):
        check_shared_store(Settings.from_env({"MCP_REQUIRE_SHARED_STORE": "true"}))
