"""Property tests: key rules, JSON round trip, cursor paging under concurrent writes, cursor tampering."""

from __future__ import annotations

import base64
import math
import uuid
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcpcore.context.state import ContextState
from mcpcore.errors import JsonRpcErrorCode, McpError
from mcpcore.storage import CursorSigner, StateService, StorageProvider
from mcpcore.storage.service import MAX_KEY, encode_value, validate_key

from .conftest import KINDS, ProviderFactory

VALID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/"
FAST = settings(max_examples=60, deadline=None)
IO = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def is_valid_key(key: str) -> bool:
    return 0 < len(key) <= MAX_KEY and all(c in VALID_CHARS for c in key) and ".." not in key


valid_keys = st.text(alphabet=VALID_CHARS, min_size=1, max_size=MAX_KEY).filter(lambda k: ".." not in k)
# Few distinct characters so keys share prefixes, segments and case-variants; long runs cross the
# filesystem provider's 96-character chunk boundary.
path_keys = st.one_of(
    st.text(alphabet="aAb/.-_", min_size=1, max_size=12),
    st.builds(lambda n, tail: "x" * n + tail, st.integers(90, 200), st.text(alphabet="a/-", max_size=4)),
).filter(lambda k: ".." not in k)


# -- keys -------------------------------------------------------------------------------------------


@FAST
@given(valid_keys)
def test_valid_keys_accepted(key: str) -> None:
    assert validate_key(key) == key


@FAST
@given(st.one_of(st.text(max_size=40), st.text(alphabet=VALID_CHARS + ":é \n\x00*%", max_size=1100)))
def test_keys_accepted_exactly_when_valid(key: str) -> None:
    if is_valid_key(key):
        assert validate_key(key) == key
    else:
        with pytest.raises(McpError) as exc:
            validate_key(key)
        assert exc.value.code == JsonRpcErrorCode.ValidationError


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
@IO
@given(keys=st.sets(path_keys, min_size=1, max_size=25))
async def test_any_valid_keys_store_get_and_list_in_order(make_provider: ProviderFactory, kind: str,
                                                          keys: set[str]) -> None:
    provider = _shared(make_provider, kind)
    tenant = uuid.uuid4().hex
    await provider.set_many(tenant, {k: k.encode() for k in keys})
    assert await provider.get_many(tenant, sorted(keys)) == {k: k.encode() for k in keys}
    items, more = await provider.list(tenant, "", None, 10_000)
    assert [k for k, _ in items] == sorted(keys) and not more
    assert all(v == k.encode() for k, v in items)
    assert await provider.clear(tenant) == len(keys)


# -- JSON round trip --------------------------------------------------------------------------------


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53 - 1), 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=25,
)
not_json = st.sampled_from([b"x", {1}, frozenset(), math.nan, math.inf, -math.inf, 2**53, -(2**53), 2**64, len,
                            object(), 1j, bytearray(b"x")])


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
@IO
@given(value=json_values)
async def test_json_round_trip(make_provider: ProviderFactory, kind: str, value: Any) -> None:
    state = ContextState(StateService(_shared(make_provider, kind), CursorSigner([b"k"])), uuid.uuid4().hex)
    await state.set("v", value)
    assert await state.get("v") == value
    assert await state.take("v") == value


@FAST
@given(value=json_values, bad=not_json, path=st.lists(st.sampled_from(["list", "dict"]), max_size=4))
def test_non_json_anywhere_is_a_serialization_error(value: Any, bad: Any, path: list[str]) -> None:
    nested: Any = bad
    for kind in path:
        nested = [value, nested] if kind == "list" else {"ok": value, "bad": nested}
    with pytest.raises(McpError) as exc:
        encode_value(nested)
    assert exc.value.code == JsonRpcErrorCode.SerializationError


# -- cursor paging under concurrent writes ----------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
@IO
@given(
    stable=st.sets(path_keys, max_size=30),
    noise=st.lists(st.tuples(st.booleans(), path_keys), max_size=40),
    prefix=st.sampled_from(["", "a", "a/", "x", "A"]),
    limit=st.integers(1, 7),
)
async def test_paging_sees_every_key_once_under_concurrent_writes(
        make_provider: ProviderFactory, kind: str, stable: set[str], noise: list[tuple[bool, str]], prefix: str,
        limit: int) -> None:
    noise = [(insert, k) for insert, k in noise if k not in stable]
    service = StateService(_shared(make_provider, kind), CursorSigner([b"k"]))
    state = ContextState(service, uuid.uuid4().hex)
    if stable:
        await state.set_many({k: k for k in stable})
    seen: list[str] = []

    async def page_through() -> None:
        cursor: str | None = None
        while True:
            page = await state.list(prefix, cursor=cursor, limit=limit)
            assert len(page.items) <= limit
            seen.extend(i.key for i in page.items)
            if page.cursor is None:
                return
            cursor = page.cursor
            await anyio.sleep(0)

    async def write_noise() -> None:
        for insert, key in noise:
            if insert:
                await state.set(key, key)
            else:
                await state.delete(key)
            await anyio.sleep(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(page_through)
        tg.start_soon(write_noise)

    assert seen == sorted(set(seen)), "keys repeated or out of order"
    want = {k for k in stable if k.startswith(prefix)}
    assert want <= set(seen)
    assert set(seen) - want <= {k for _, k in noise}


# -- cursor tampering -------------------------------------------------------------------------------


tenants = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=20)
prefixes = st.text(alphabet="ab/.", max_size=6).filter(lambda p: ".." not in p)
SIGNER = CursorSigner([b"current-key", b"old-key"])


def _raw(cursor: str) -> bytes:
    return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _rejected(tenant: str, prefix: str, cursor: Any) -> bool:
    try:
        SIGNER.decode(tenant, prefix, cursor)
    except McpError as exc:
        assert exc.code == JsonRpcErrorCode.InvalidParams
        assert exc.data == {"reason": "invalid_cursor"}
        return True
    return False


@FAST
@given(tenant=tenants, prefix=prefixes, tail=st.text(alphabet="ab/.", max_size=10), data=st.data())
def test_tampered_cursor_bytes_never_accepted(tenant: str, prefix: str, tail: str, data: st.DataObject) -> None:
    cursor = SIGNER.encode(tenant, prefix, prefix + tail)
    assert SIGNER.decode(tenant, prefix, cursor) == prefix + tail
    raw = bytearray(_raw(cursor))
    how = data.draw(st.sampled_from(["flip", "truncate", "insert", "replace-mac"]))
    if how == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= 1 << data.draw(st.integers(0, 7))
    elif how == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    elif how == "insert":
        i = data.draw(st.integers(0, len(raw)))
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=4))
    else:
        raw[-16:] = data.draw(st.binary(min_size=16, max_size=16).filter(lambda b: b != bytes(raw[-16:])))
    assert _rejected(tenant, prefix, _encode(bytes(raw)))


@FAST
@given(tenant=tenants, prefix=prefixes, edit=st.tuples(st.integers(0, 200), st.integers(0, 3), st.text(max_size=3)))
def test_edited_cursor_strings_never_point_elsewhere(tenant: str, prefix: str, edit: tuple[int, int, str]) -> None:
    cursor = SIGNER.encode(tenant, prefix, prefix + "key")
    at, cut, insert = edit
    at = at % (len(cursor) + 1)
    mutated = cursor[:at] + insert + cursor[at + cut:]
    assume(mutated != cursor)
    try:
        key = SIGNER.decode(tenant, prefix, mutated)
    except McpError as exc:
        assert exc.code == JsonRpcErrorCode.InvalidParams
        return
    # Only a non-canonical spelling of the very same signed bytes may be accepted.
    assert key == prefix + "key"


@FAST
@given(t1=tenants, p1=prefixes, t2=tenants, p2=prefixes)
def test_cursor_bound_to_tenant_and_prefix(t1: str, p1: str, t2: str, p2: str) -> None:
    cursor = SIGNER.encode(t1, p1, p1 + "k")
    assert _rejected(t2, p2, cursor) == ((t1, p1) != (t2, p2))
    assert _rejected(t1, p1, CursorSigner([b"someone-else"]).encode(t1, p1, p1 + "k"))
    assert not _rejected(t1, p1, CursorSigner([b"old-key"]).encode(t1, p1, p1 + "k"))  # rotation


@FAST
@given(st.one_of(st.text(max_size=100), st.binary(max_size=64).map(_encode), st.integers(), st.none()))
def test_garbage_cursors_rejected(cursor: Any) -> None:
    assert _rejected("t", "", cursor)


# -- helpers ----------------------------------------------------------------------------------------


def _shared(make_provider: ProviderFactory, kind: str) -> StorageProvider:
    """One provider per test function and kind, reused across its examples (each uses a fresh tenant)."""
    made: dict[str, StorageProvider] = make_provider.__dict__.setdefault("shared", {})
    if kind not in made:
        made[kind] = make_provider(kind)
    return made[kind]
