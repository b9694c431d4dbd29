"""The authorization server's memory store: every record expires, each kind is bounded, one-time
records are taken or swapped once."""

from __future__ import annotations

import pytest

from mcpcore.auth.proxy.keys import ProxyKeys
from mcpcore.auth.proxy.store import MemoryProxyStore, StoreFull

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_records_expire_and_kinds_are_bounded() -> None:
    clock = Clock()
    store = MemoryProxyStore(cap=3, clock=clock)
    for i in range(3):
        await store.put("txn", str(i), {"i": i}, ttl=10)
    with pytest.raises(StoreFull):
        await store.put("txn", "3", {}, ttl=10)
    await store.put("code", "other-kind", {}, ttl=10)  # each kind has its own bound
    clock.now += 11
    assert await store.get("txn", "0") is None
    await store.put("txn", "3", {}, ttl=10)  # expired ones make room
    assert store.count("txn") == 1


async def test_take_and_swap_happen_once() -> None:
    store = MemoryProxyStore()
    await store.put("code", "c", {"v": 1}, ttl=60)
    assert await store.take("code", "c") == {"v": 1}
    assert await store.take("code", "c") is None
    await store.put("refresh", "r", {"v": 1}, ttl=60)
    assert await store.swap("refresh", "r", {"used": True}) == {"v": 1}
    assert await store.swap("refresh", "r", {"used": True}) == {"used": True}
    assert await store.swap("refresh", "gone", {"used": True}) is None
    assert await store.get("refresh", "gone") is None


async def test_enroll_and_hit_count_within_their_bounds() -> None:
    store = MemoryProxyStore()
    assert [await store.enroll("registrations", str(i), 60, limit=2) for i in range(3)] == [True, True, False]
    assert [await store.hit("rate", "1.2.3.4", 60) for _ in range(3)] == [1, 2, 3]


def test_sealed_tokens_open_only_with_their_context_and_keys() -> None:
    old = ProxyKeys(["old-secret-old-secret-old-secret-0"])
    rotated = ProxyKeys(["new-secret-new-secret-new-secret-1", "old-secret-old-secret-old-secret-0"])
    sealed = old.seal({"access_token": "upstream"}, "upstream:alice")
    assert rotated.open(sealed, "upstream:alice") == {"access_token": "upstream"}
    assert rotated.open(sealed, "upstream:bob") is None
    assert rotated.open(sealed[:-4] + "AAAA", "upstream:alice") is None
    assert ProxyKeys(["new-secret-new-secret-new-secret-1"]).open(sealed, "upstream:alice") is None
    assert rotated.jwks[1] == old.jwks[0], "the old key still verifies after rotation"
    assert rotated.jwks[0]["kid"] != old.jwks[0]["kid"]
