"""One conformance suite for every ``ctx.state`` provider: memory, filesystem and Redis.

Most tests go through ``ContextState`` -> ``StateService`` -> provider (the path handlers use);
the ``raw`` ones call the provider protocol directly.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import time
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from mcpcore.config import Settings
from mcpcore.context.state import ContextState, StateItem, StatePage
from mcpcore.errors import ConfigurationError, JsonRpcErrorCode, McpError
from mcpcore.storage import (
    CursorSigner,
    FileStorage,
    MemoryStorage,
    RedisStorage,
    StateService,
    StorageProvider,
    create_provider,
)

from .conftest import ProviderFactory, drop_namespace, free_port, redis_server

pytestmark = pytest.mark.anyio

TTL = 0.2
TTL_WAIT = 0.3

# Keys whose order differs between naive path walks and plain string order, long segments, edge cases.
TRICKY_KEYS = [
    "a", "a-b", "a.b", "a/b", "a/b/c", "a0", "A", "Ab", "_", "a//b", "/x", "x/", "./y", "b", "item/1", "item/10",
    "item/2", "item-x", "item.x", "item0", "x" * 95, "x" * 96, "x" * 97, "x" * 96 + "/q", "x" * 96 + "-q",
    "x" * 200, "a/" * 100 + "z", "z" * 1024, ("n/" * 511) + "nn", ".", "-", "v.v", "d.d", "c.c", "k.tmp", "k.claim",
]


def state_of(service: StateService, tenant: str | None = "tenant-a") -> ContextState:
    return ContextState(service, tenant)


class Item(BaseModel):
    name: str
    count: int


def code_of(exc: pytest.ExceptionInfo[McpError]) -> int:
    return exc.value.code


# -- every method through ctx.state ---------------------------------------------------------------


async def test_get_set_delete(service: StateService) -> None:
    st = state_of(service)
    assert await st.get("item/1") is None
    await st.set("item/1", {"name": "Widget", "count": 42})
    assert await st.get("item/1") == {"name": "Widget", "count": 42}
    await st.set("item/1", [1, 2, 3])
    assert await st.get("item/1") == [1, 2, 3]
    assert await st.delete("item/1") is True
    assert await st.delete("item/1") is False
    assert await st.get("item/1") is None


async def test_batch_methods(service: StateService) -> None:
    st = state_of(service)
    await st.set_many({"a": 1, "b": {"x": True}, "c/d": "s"})
    await st.set_many([("e", None), ("f", 1.5)])
    assert await st.get_many(["a", "b", "c/d", "missing", "e", "f"]) == {
        "a": 1, "b": {"x": True}, "c/d": "s", "e": None, "f": 1.5}
    assert await st.get_many([]) == {}
    assert await st.delete_many(["a", "b", "a", "missing"]) == 2
    assert await st.delete_many([]) == 0
    assert await st.get_many(["a", "b", "c/d"]) == {"c/d": "s"}
    await st.set_many({})


async def test_get_with_pydantic_model(service: StateService) -> None:
    st = state_of(service)
    await st.set("item/1", Item(name="Widget", count=3))
    got = await st.get("item/1", Item)
    assert got == Item(name="Widget", count=3)
    assert await st.get("missing", Item) is None
    assert await st.get("item/1", dict[str, Any]) == {"name": "Widget", "count": 3}
    await st.set("bad", {"name": "x"})
    with pytest.raises(McpError) as exc:
        await st.get("bad", Item)
    assert code_of(exc) == JsonRpcErrorCode.ValidationError
    assert await st.take("item/1", Item) == Item(name="Widget", count=3)
    assert await st.get("item/1") is None


async def test_take_semantics(service: StateService) -> None:
    st = state_of(service)
    assert await st.take("consent/1") is None
    await st.set("consent/1", {"granted": True})
    assert await st.take("consent/1") == {"granted": True}
    assert await st.take("consent/1") is None
    assert await st.get("consent/1") is None
    assert (await st.list("consent/")).items == []
    await st.set("consent/1", "again")
    assert await st.take("consent/1") == "again"
    await st.set("short", 1, ttl=TTL)
    await anyio.sleep(TTL_WAIT)
    assert await st.take("short") is None


async def test_take_concurrent_in_process(service: StateService) -> None:
    st = state_of(service)

    async def taker(go: anyio.Event, results: list[Any]) -> None:
        await go.wait()
        results.append(await st.take("once"))

    for round_ in range(3):
        await st.set("once", {"round": round_})
        results: list[Any] = []
        go = anyio.Event()
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(taker, go, results)
            go.set()
        assert [r for r in results if r is not None] == [{"round": round_}]
        assert len(results) == 20


# -- JSON round trip and serialisation errors ------------------------------------------------------


JSON_VALUES: list[Any] = [
    {"nested": {"list": [1, "two", 3.5, None, True, False], "empty": {}}},
    [], [[[]]], "", "text with ünïcödé and emoji 🎉", "line\nbreak\t\"quoted\"", 0, -1, 2**53 - 1, -(2**53 - 1),
    0.1, -1e300, 5e-324, True, False, None, {"1": "string keys"},
]


@pytest.mark.parametrize("value", JSON_VALUES, ids=range(len(JSON_VALUES)))
async def test_json_round_trip(service: StateService, value: Any) -> None:
    st = state_of(service)
    await st.set("v", value)
    assert await st.get("v") == value
    assert (await st.list()).items == [StateItem("v", value)]


async def test_round_trip_conversions(service: StateService) -> None:
    st = state_of(service)
    when = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.UTC)
    await st.set("when", {"at": when, "day": dt.date(2024, 5, 6), "tuple": (1, 2)})
    assert await st.get("when") == {"at": "2024-05-06T07:08:09+00:00", "day": "2024-05-06", "tuple": [1, 2]}


def _cycle_list() -> list[Any]:
    x: list[Any] = []
    x.append(x)
    return x


def _cycle_dict() -> dict[str, Any]:
    x: dict[str, Any] = {}
    x["self"] = x
    return x


BAD_VALUES: dict[str, Any] = {
    "bytes": b"raw", "set": {1, 2}, "nan": math.nan, "inf": math.inf, "-inf": -math.inf,
    "nested-nan": {"a": [1, {"b": math.nan}]}, "cycle-list": _cycle_list(), "cycle-dict": _cycle_dict(),
    "int>2**53": 2**53, "int<-2**53": -(2**53), "huge-int": 10**30, "function": len, "lambda": lambda: 1,
    "object": object(), "complex": 1j,
}


@pytest.mark.parametrize("name", list(BAD_VALUES))
async def test_serialization_error_writes_nothing(service: StateService, name: str) -> None:
    st = state_of(service)
    with pytest.raises(McpError) as exc:
        await st.set("bad", BAD_VALUES[name])
    assert code_of(exc) == JsonRpcErrorCode.SerializationError
    assert await st.get("bad") is None
    with pytest.raises(McpError) as exc:
        await st.set_many({"good-1": 1, "bad": BAD_VALUES[name], "good-2": 2})
    assert code_of(exc) == JsonRpcErrorCode.SerializationError
    assert await st.get_many(["good-1", "bad", "good-2"]) == {}
    assert (await st.list()).items == []


# -- key, prefix, limit and ttl rules --------------------------------------------------------------


BAD_KEYS: list[Any] = ["", "a\n", "a:b", "tenant:key", "a..b", "..", "../etc/passwd", "a b", "é", "a\nb", "a\\b", "k*",
                       "x" * 1025, "%2e", None, 1, b"bytes"]


@pytest.mark.parametrize("key", BAD_KEYS, ids=[repr(k)[:20] for k in BAD_KEYS])
async def test_invalid_keys_rejected_on_every_method(service: StateService, key: Any) -> None:
    st = state_of(service)
    calls = [
        st.get(key), st.set(key, 1), st.delete(key), st.take(key), st.get_many(["ok", key]),
        st.set_many({"ok": 1, key: 2}), st.delete_many(["ok", key]),
    ]
    for call in calls:
        with pytest.raises(McpError) as exc:
            await call
        assert code_of(exc) == JsonRpcErrorCode.ValidationError
    assert await st.get("ok") is None


async def test_key_rules_accept(service: StateService) -> None:
    st = state_of(service)
    for key in ["a", "A-Z_a-z.0-9/x", "k" * 1024, ".hidden", "a.b.c", "/lead", "trail/", "a//b", "."]:
        await st.set(key, key)
        assert await st.get(key) == key


async def test_batch_argument_must_be_a_list(service: StateService) -> None:
    st = state_of(service)
    for bad in ["abc", 5, None]:
        with pytest.raises(McpError) as exc:
            await st.get_many(bad)  # type: ignore[arg-type]
        assert code_of(exc) == JsonRpcErrorCode.ValidationError


async def test_prefix_rules(service: StateService) -> None:
    st = state_of(service)
    await st.set("p" * 512, 1)
    assert [i.key for i in (await st.list("p" * 512)).items] == ["p" * 512]
    for bad in ["p" * 513, "a:b", "a..", "a b", "é", "p\n", 5]:
        with pytest.raises(McpError) as exc:
            await st.list(bad)  # type: ignore[arg-type]
        assert code_of(exc) == JsonRpcErrorCode.ValidationError


async def test_limit_rules(service: StateService) -> None:
    st = state_of(service)
    await st.set_many({f"k{i}": i for i in range(3)})
    assert len((await st.list(limit=1)).items) == 1
    assert len((await st.list(limit=10_000)).items) == 3
    for bad in [0, -1, 10_001, True, 1.5, "5"]:
        with pytest.raises(McpError) as exc:
            await st.list(limit=bad)  # type: ignore[arg-type]
        assert code_of(exc) == JsonRpcErrorCode.ValidationError


async def test_ttl_rules(service: StateService) -> None:
    st = state_of(service)
    for bad in [0, -1, math.nan, math.inf, True, "10"]:
        with pytest.raises(McpError) as exc:
            await st.set("k", 1, ttl=bad)  # type: ignore[arg-type]
        assert code_of(exc) == JsonRpcErrorCode.ValidationError
        with pytest.raises(McpError):
            await st.set_many({"k": 1}, ttl=bad)  # type: ignore[arg-type]
    assert await st.get("k") is None


async def test_ttl_expiry_everywhere(service: StateService) -> None:
    st = state_of(service)
    await st.set("keep", "forever")
    await st.set("short/1", "s", ttl=TTL)
    await st.set_many({"short/2": 2, "short/3": 3}, ttl=TTL)
    await st.set("long", "l", ttl=60)
    assert await st.get("short/1") == "s"
    assert len((await st.list("short/")).items) == 3
    await anyio.sleep(TTL_WAIT)
    assert await st.get("short/1") is None
    assert await st.get_many(["short/1", "short/2", "keep", "long"]) == {"keep": "forever", "long": "l"}
    assert (await st.list("short/")).items == []
    assert [i.key for i in (await st.list()).items] == ["keep", "long"]
    assert await st.delete("short/2") is False
    assert await st.delete_many(["short/3", "keep"]) == 1
    assert await st.take("short/1") is None
    await st.set("short/1", "back")
    assert await st.get("short/1") == "back"


async def test_set_overwrites_ttl(service: StateService) -> None:
    st = state_of(service)
    await st.set("k", 1, ttl=TTL)
    await st.set("k", 2)
    await anyio.sleep(TTL_WAIT)
    assert await st.get("k") == 2


# -- tenants ----------------------------------------------------------------------------------------


async def test_tenant_isolation(service: StateService) -> None:
    a, b = state_of(service, "tenant-a"), state_of(service, "tenant-b")
    await a.set("shared/key", "from a")
    await b.set("shared/key", "from b")
    await a.set_many({"only-a": 1})
    assert await a.get("shared/key") == "from a"
    assert await b.get("shared/key") == "from b"
    assert await b.get("only-a") is None
    assert await b.get_many(["only-a", "shared/key"]) == {"shared/key": "from b"}
    assert [i.key for i in (await b.list()).items] == ["shared/key"]
    assert await b.take("only-a") is None
    assert await b.delete("only-a") is False
    assert await a.take("shared/key") == "from a"
    assert await b.get("shared/key") == "from b"
    assert await service.provider.clear("tenant-b") == 1
    assert await a.get("only-a") == 1


@pytest.mark.parametrize("tenant", [None, ""])
async def test_missing_tenant_fails_closed(service: StateService, tenant: str | None) -> None:
    st = state_of(service, tenant)
    calls = [st.get("k"), st.set("k", 1), st.delete("k"), st.take("k"), st.get_many(["k"]),
             st.set_many({"k": 1}), st.delete_many(["k"]), st.list(), st.list("p/", cursor="x", limit=5)]
    for call in calls:
        with pytest.raises(McpError) as exc:
            await call
        assert code_of(exc) == JsonRpcErrorCode.InvalidRequest
        assert exc.value.data == {"reason": "tenant_required"}


async def test_unusual_tenant_names_stay_apart(service: StateService) -> None:
    tenants = ["default", "Default", "t.1", "t_1", "../../etc", "a/b", "x" * 300, "tënant", "{brace}", "a:b"]
    for t in tenants:
        await state_of(service, t).set("k", t)
    for t in tenants:
        assert await state_of(service, t).get("k") == t
        assert [i.value for i in (await state_of(service, t).list()).items] == [t]


async def test_no_state_service_is_a_configuration_error() -> None:
    with pytest.raises(McpError) as exc:
        await ContextState(None, "t").get("k")
    assert code_of(exc) == JsonRpcErrorCode.ConfigurationError


# -- listing and cursors ----------------------------------------------------------------------------


async def test_list_order_prefix_and_pages(service: StateService) -> None:
    st = state_of(service)
    await st.set_many({k: i for i, k in enumerate(TRICKY_KEYS)})
    page = await st.list(limit=10_000)
    assert isinstance(page, StatePage)
    assert [i.key for i in page.items] == sorted(TRICKY_KEYS)
    assert page.cursor is None
    for prefix in ["a", "a/", "item/", "item", "x", "x" * 96, "n/n/", ".", "zz", "/"]:
        want = sorted(k for k in TRICKY_KEYS if k.startswith(prefix))
        assert [i.key for i in (await st.list(prefix)).items] == want, prefix
        assert await _walk(st, prefix, 3) == want, prefix


async def _walk(st: ContextState, prefix: str, limit: int) -> list[str]:
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = await st.list(prefix, cursor=cursor, limit=limit)
        assert len(page.items) <= limit
        seen.extend(i.key for i in page.items)
        if page.cursor is None:
            return seen
        assert len(page.items) == limit
        cursor = page.cursor


async def test_cursor_paging_sees_each_key_once(service: StateService) -> None:
    st = state_of(service)
    keys = [f"doc/{i:03d}" for i in range(25)]
    await st.set_many({k: k for k in keys})
    await st.set_many({"other/1": 1, "doc": 0, "doc0": 0})
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await st.list("doc/", cursor=cursor, limit=7)
        pages += 1
        seen.extend(i.key for i in page.items)
        assert all(i.value == i.key for i in page.items)
        # writes between pages: new keys after the cursor are seen, deleted ones are not
        if pages == 1:
            await st.set("doc/999", "doc/999")
            await st.delete("doc/020")
            await st.set("doc/000a", "doc/000a")  # before the cursor: not seen
        if page.cursor is None:
            break
        cursor = page.cursor
    expected = [k for k in keys if k != "doc/020"] + ["doc/999"]
    assert seen == expected
    assert pages == 4


async def test_exact_page_boundary_has_no_cursor(service: StateService) -> None:
    st = state_of(service)
    await st.set_many({f"k{i}": i for i in range(4)})
    first = await st.list(limit=2)
    assert first.cursor is not None
    second = await st.list(cursor=first.cursor, limit=2)
    assert [i.key for i in second.items] == ["k2", "k3"]
    assert second.cursor is None
    assert (await st.list(limit=4)).cursor is None


async def test_expired_entries_do_not_fill_pages(service: StateService) -> None:
    st = state_of(service)
    await st.set_many({f"e{i}": i for i in range(6)}, ttl=TTL)
    await st.set_many({"e9": 9, "f": 1})
    await anyio.sleep(TTL_WAIT)
    page = await st.list("e", limit=1)
    assert [i.key for i in page.items] == ["e9"]
    assert page.cursor is None


async def test_forged_and_foreign_cursors(service: StateService) -> None:
    a, b = state_of(service, "tenant-a"), state_of(service, "tenant-b")
    await a.set_many({f"p/{i}": i for i in range(5)})
    await b.set_many({f"p/{i}": i for i in range(5)})
    cursor = (await a.list("p/", limit=2)).cursor
    assert cursor is not None
    other_key = StateService(service.provider, CursorSigner([b"another-key"]))
    foreign = [
        (b, "p/", cursor),                                  # other tenant
        (a, "p", cursor),                                   # other prefix
        (a, "", cursor),                                    # no prefix
        (a, "p/", cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB")),  # tampered MAC
        (a, "p/", "A" + cursor[1:] if cursor[0] != "A" else "B" + cursor[1:]),  # tampered payload
        (a, "p/", "garbage!!"),
        (a, "p/", ""),
        (a, "p/", "x" * 5000),
        (a, "p/", (await state_of(other_key, "tenant-a").list("p/", limit=2)).cursor),  # other signing key
    ]
    for st, prefix, bad in foreign:
        with pytest.raises(McpError) as exc:
            await st.list(prefix, cursor=bad, limit=2)
        assert code_of(exc) == JsonRpcErrorCode.InvalidParams
        assert exc.value.data == {"reason": "invalid_cursor"}
    rest = await a.list("p/", cursor=cursor, limit=10)
    assert [i.key for i in rest.items] == ["p/2", "p/3", "p/4"]


async def test_cursor_survives_restart_and_rotation(provider: StorageProvider) -> None:
    one = StateService(provider, CursorSigner.from_settings("key-1", None))
    await state_of(one).set_many({f"k{i}": i for i in range(4)})
    cursor = (await state_of(one).list(limit=2)).cursor
    assert cursor is not None
    restarted = StateService(provider, CursorSigner.from_settings(None, "key-1"))  # MCP_REQUEST_STATE_KEY fallback
    assert [i.key for i in (await state_of(restarted).list(cursor=cursor)).items] == ["k2", "k3"]
    rotated = StateService(provider, CursorSigner.from_settings("key-2,key-1", None))
    assert [i.key for i in (await state_of(rotated).list(cursor=cursor)).items] == ["k2", "k3"]
    new_cursor = (await state_of(rotated).list(limit=2)).cursor
    with pytest.raises(McpError):
        await state_of(one).list(cursor=new_cursor)


# -- the raw provider protocol ----------------------------------------------------------------------


async def test_raw_protocol(provider: StorageProvider) -> None:
    assert isinstance(provider, StorageProvider)
    await provider.ping()
    assert await provider.get("t", "k") is None
    await provider.set("t", "k", b'{"a":1}')
    assert await provider.get("t", "k") == b'{"a":1}'
    await provider.set("t", "K", b"2")
    assert await provider.get("t", "k") == b'{"a":1}'  # keys are case-sensitive everywhere
    assert await provider.get_many("t", ["k", "K", "nope"]) == {"k": b'{"a":1}', "K": b"2"}
    await provider.set_many("t", {"m/1": b"1", "m/2": b"2", "m/3": b"3"})
    assert await provider.list("t", "m/", None, 2) == ([("m/1", b"1"), ("m/2", b"2")], True)
    assert await provider.list("t", "m/", "m/2", 2) == ([("m/3", b"3")], False)
    assert await provider.list("t", "m/", "m/3", 2) == ([], False)
    assert await provider.list("t", "zzz", None, 5) == ([], False)
    assert await provider.list("nobody", "", None, 5) == ([], False)
    assert await provider.take("t", "m/1") == b"1"
    assert await provider.take("t", "m/1") is None
    assert await provider.delete("t", "m/2") is True
    assert await provider.delete("t", "m/2") is False
    assert await provider.delete_many("t", ["m/3", "m/3", "nope", "K"]) == 2
    await provider.set("t", "gone", b"1", ttl=TTL)
    await provider.set("u", "k", b"u")
    assert await provider.clear("t") == 2
    assert await provider.clear("t") == 0
    assert await provider.list("t", "", None, 10) == ([], False)
    assert await provider.get("u", "k") == b"u"
    assert await provider.clear("nobody") == 0


async def test_raw_clear_skips_expired(provider: StorageProvider) -> None:
    await provider.set_many("t", {"a": b"1", "b": b"2"}, ttl=TTL)
    await provider.set("t", "c", b"3")
    await anyio.sleep(TTL_WAIT)
    assert await provider.clear("t") == 1
    assert await provider.get_many("t", ["a", "b", "c"]) == {}


async def test_raw_values_are_opaque_bytes(provider: StorageProvider) -> None:
    blobs = {"empty": b"", "binary": bytes(range(256)), "big": os.urandom(256 * 1024)}
    await provider.set_many("t", blobs)
    assert await provider.get_many("t", list(blobs)) == blobs
    items, more = await provider.list("t", "", None, 10)
    assert dict(items) == blobs and more is False
    assert await provider.take("t", "binary") == bytes(range(256))


# -- provider-specific ------------------------------------------------------------------------------


async def test_memory_capacity() -> None:
    storage = MemoryStorage(max_entries=3)
    st = state_of(StateService(storage, CursorSigner([b"k"])))
    await st.set_many({"a": 1, "b": 2})
    await st.set("c", 3, ttl=TTL)
    await st.set("a", 10)  # overwriting needs no room
    with pytest.raises(McpError) as exc:
        await st.set("d", 4)
    assert code_of(exc) == JsonRpcErrorCode.ServiceUnavailable
    assert exc.value.data == {"reason": "storage_full", "maxEntries": 3}
    assert "STORAGE_MAX_ENTRIES" in exc.value.message
    with pytest.raises(McpError):
        await st.set_many({"x": 1, "y": 2})
    assert await st.get_many(["x", "y"]) == {}
    await anyio.sleep(TTL_WAIT)
    await st.set("d", 4)  # the expired entry made room
    assert await st.delete("a")
    await st.set("e", 5)
    assert await st.get_many(["a", "b", "c", "d", "e"]) == {"b": 2, "d": 4, "e": 5}


async def test_filesystem_layout_is_contained(tmp_path: Any) -> None:
    root = tmp_path / "root"
    storage = FileStorage(root)
    st = state_of(StateService(storage, CursorSigner([b"k"])), "Tenant-1")
    keys = ["a", "A", "a/b", "./x", "x/", "/y", "v.v", "k.tmp", "k.claim", "d.d", "y" * 300, "q/" * 300 + "q"]
    await st.set_many({k: k for k in keys})
    await state_of(StateService(storage, CursorSigner([b"k"])), "../../evil").set("x", 1)
    for folder, _, files in os.walk(root):
        assert os.path.realpath(folder).startswith(os.path.realpath(root))
        for name in files:
            assert name.endswith(".v"), name
            assert len(name.encode()) <= 255
    tenants = sorted(os.listdir(root))
    assert tenants[0] == "t.^tenant-1"
    assert tenants[1].startswith("x.")
    assert [i.key for i in (await st.list(limit=100)).items] == sorted(keys)
    # internal files in a folder are ignored
    (root / "t.^tenant-1" / "a.v.deadbeef.tmp").write_bytes(b"partial")
    (root / "t.^tenant-1" / "stray").write_bytes(b"?")
    assert [i.key for i in (await st.list(limit=100)).items] == sorted(keys)
    assert await st.get("a") == "a"
    # orphans of crashed processes are swept by list once stale
    old = root / "t.^tenant-1" / "b.v.0123.claim"
    old.write_bytes(b"orphan")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert len((await st.list(limit=100)).items) == len(keys)
    assert not old.exists()
    # deleting everything removes the folders again
    assert await st.delete_many(keys) == len(keys)
    assert sorted(os.listdir(root / "t.^tenant-1")) == ["a.v.deadbeef.tmp", "stray"]


async def test_filesystem_shared_between_instances(tmp_path: Any) -> None:
    one, two = FileStorage(tmp_path), FileStorage(tmp_path)
    await one.set("t", "k", b"1", ttl=TTL)
    assert await two.get("t", "k") == b"1"
    assert await two.take("t", "k") == b"1"
    assert await one.take("t", "k") is None
    await one.set("t", "e", b"1", ttl=TTL)
    await anyio.sleep(TTL_WAIT)
    folder = tmp_path / "t.t"
    assert os.listdir(folder) == ["e.v"]
    assert await two.get("t", "e") is None  # expired file removed lazily
    assert not folder.exists()


async def test_filesystem_expired_file_replaced_concurrently_survives(tmp_path: Any) -> None:
    now = [1000.0]
    storage = FileStorage(tmp_path, clock=lambda: now[0])
    await storage.set("t", "k", b"old", ttl=1)
    path = storage._path("t", "k")
    now[0] += 5
    real = storage._drop_expired

    def replace_then_drop(p: str, seen: os.stat_result) -> None:
        storage._write(p, storage._blob(b"new", None))  # another writer wins the race
        real(p, seen)

    storage._drop_expired = replace_then_drop  # type: ignore[method-assign,assignment]
    assert await storage.get("t", "k") is None
    storage._drop_expired = real  # type: ignore[method-assign]
    assert await storage.get("t", "k") == b"new"
    assert os.path.exists(path)


async def test_filesystem_fsync_and_ping(tmp_path: Any) -> None:
    storage = FileStorage(tmp_path / "deep" / "root", fsync=True)
    await storage.ping()
    await storage.set("t", "k", b"v")
    assert await storage.get("t", "k") == b"v"
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    broken = FileStorage(blocker)
    with pytest.raises(McpError) as exc:
        await broken.set("t", "k", b"v")
    assert code_of(exc) == JsonRpcErrorCode.ServiceUnavailable
    with pytest.raises(McpError):
        await broken.ping()


async def test_redis_keys_share_a_hash_tag(redis_url: str) -> None:
    storage = RedisStorage(redis_url, namespace="tag-test")
    try:
        await storage.set_many("tenant-1", {"a": b"1", "b/c": b"2"}, ttl=60)
        await storage.set("odd tenant/{x}", "k", b"1")
        keys = sorted([k.decode() async for k in storage.client.scan_iter(match="{tag-test:*")])
        assert keys[-3:] == ["{tag-test:tenant-1}:idx", "{tag-test:tenant-1}:k:a", "{tag-test:tenant-1}:k:b/c"]
        odd = [k for k in keys if "tenant-1" not in k]
        assert len(odd) == 2 and all(k.startswith("{tag-test:#") and k.count("}") == 1 for k in odd)
        assert 59_000 < await storage.client.pttl("{tag-test:tenant-1}:k:a") <= 60_000
    finally:
        await drop_namespace(storage)
        await storage.close()


async def test_redis_drops_stale_index_members(redis_url: str) -> None:
    storage = RedisStorage(redis_url, namespace="stale-test")
    try:
        await storage.set_many("t", {f"k{i}": b"x" for i in range(5)}, ttl=TTL)
        await storage.set("t", "live", b"1")
        assert await storage.client.zcard("{stale-test:t}:idx") == 6
        await anyio.sleep(TTL_WAIT)
        assert await storage.list("t", "", None, 2) == ([("live", b"1")], False)
        assert await storage.client.zcard("{stale-test:t}:idx") == 1
    finally:
        await drop_namespace(storage)
        await storage.close()


async def test_redis_take_lua_fallback(redis_url: str) -> None:
    storage = RedisStorage(redis_url, namespace="lua-test")
    storage._getdel = False  # as on a server older than 6.2
    try:
        await storage.set("t", "k", b"v")
        assert await storage.take("t", "k") == b"v"
        assert await storage.take("t", "k") is None
        assert await storage.client.zcard("{lua-test:t}:idx") == 0
    finally:
        await drop_namespace(storage)
        await storage.close()


async def test_redis_client_ownership(redis_url: str) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(redis_url)
    text_client = Redis.from_url(redis_url, decode_responses=True)
    try:
        borrowed = RedisStorage(client=client, namespace="own-test")
        await borrowed.set("t", "k", b"v")
        await borrowed.close()
        assert await client.ping()  # left open
        text = RedisStorage(client=text_client, namespace="own-test")  # decode_responses=True still yields bytes
        assert await text.list("t", "", None, 5) == ([("k", b"v")], False)
        assert await text.get_many("t", ["k"]) == {"k": b"v"}
        assert await text.take("t", "k") == b"v"
        await drop_namespace(borrowed)
    finally:
        await client.aclose()
        await text_client.aclose()
    with pytest.raises(ValueError):
        RedisStorage()
    with pytest.raises(ValueError):
        RedisStorage(redis_url, client=client)
    with pytest.raises(ValueError):
        RedisStorage(redis_url, namespace="a{b")


async def test_redis_unreachable_is_service_unavailable(caplog: pytest.LogCaptureFixture) -> None:
    storage = RedisStorage(f"redis://:secret@127.0.0.1:{free_port()}/0", connect_timeout=0.5, socket_timeout=0.5)
    started = time.monotonic()
    for call in [storage.ping(), storage.get("t", "k"), storage.set("t", "k", b"v"), storage.take("t", "k"),
                 storage.list("t", "", None, 5), storage.set_many("t", {"a": b"1"}), storage.clear("t")]:
        with pytest.raises(McpError) as exc:
            await call
        assert code_of(exc) == JsonRpcErrorCode.ServiceUnavailable
        assert exc.value.data == {"reason": "storage_unavailable"}
        # Where Redis is, and the driver's words, are for the operator's log, never the caller.
        assert "127.0.0.1" not in exc.value.message and "secret" not in exc.value.message
    logged = [r.getMessage() for r in caplog.records if r.name == "mcpcore.storage"]
    assert logged and all("127.0.0.1" in m and "REDIS_URL" in m and "secret" not in m for m in logged)
    assert time.monotonic() - started < 5
    await storage.close()
    st = state_of(StateService(storage, CursorSigner([b"k"])))
    with pytest.raises(McpError) as exc:
        await st.get("k")
    assert code_of(exc) == JsonRpcErrorCode.ServiceUnavailable


async def test_redis_server_dying_mid_use_is_service_unavailable(tmp_path: Any) -> None:
    with redis_server(tmp_path / "dying.log") as (url, proc):
        storage = RedisStorage(url, connect_timeout=0.5, socket_timeout=0.5)
        await storage.set("t", "k", b"v")
        assert await storage.get("t", "k") == b"v"
        proc.terminate()
        proc.wait(5)
        started = time.monotonic()
        for call in [storage.get("t", "k"), storage.take("t", "k"), storage.get_many("t", ["k"]),
                     storage.delete("t", "k"), storage.delete_many("t", ["k"]), storage.ping()]:
            with pytest.raises(McpError) as exc:
                await call
            assert code_of(exc) == JsonRpcErrorCode.ServiceUnavailable
        assert time.monotonic() - started < 5
        await storage.close()


# -- factory ----------------------------------------------------------------------------------------


async def test_factory(tmp_path: Any, redis_url: str) -> None:
    mem = create_provider(Settings.from_env({"STORAGE_MAX_ENTRIES": "7"}))
    assert isinstance(mem, MemoryStorage) and mem.max_entries == 7
    fs = create_provider(Settings.from_env({"STORAGE_PROVIDER_TYPE": "filesystem",
                                            "STORAGE_FILESYSTEM_PATH": str(tmp_path / "fs")}))
    assert isinstance(fs, FileStorage) and fs.root == str(tmp_path / "fs")
    rs = create_provider(Settings.from_env({"STORAGE_PROVIDER_TYPE": "redis", "REDIS_URL": redis_url}))
    assert isinstance(rs, RedisStorage)
    await rs.ping()
    await rs.close()
    with pytest.raises(ConfigurationError, match="REDIS_URL"):
        create_provider(Settings.from_env({"STORAGE_PROVIDER_TYPE": "redis"}))
    with pytest.raises(ConfigurationError, match="REDIS_URL"):
        create_provider(Settings.from_env({"STORAGE_PROVIDER_TYPE": "redis", "REDIS_URL": "localhost:6379"}))
    with pytest.raises(ConfigurationError, match="STORAGE_FILESYSTEM_PATH"):
        create_provider(Settings.from_env({"STORAGE_PROVIDER_TYPE": "filesystem"}, storage_path=" "))


async def test_make_provider_fixture_closes(make_provider: ProviderFactory) -> None:
    for kind in ["memory", "filesystem"]:
        p = make_provider(kind)
        await p.set("t", "k", b"1")
        assert await p.get("t", "k") == b"1"
