"""The three tools of the TM-style workload, shared by every Python server (``tm_mcpcore``,
``tm_sdk``, ``tm_fastmcp``), so that each framework wraps exactly the same I/O.

Every call does real network I/O: at least one request to the harness's HTTP API
(``BENCH_API_URL``, :mod:`tm_api`) and at least one round trip to its redis-server
(``BENCH_REDIS_URL``). Clients are made once per process, on first use, with enough pooled
connections for 50 concurrent calls. Each tool answers one JSON document as text, the same bytes
for every framework (the TypeScript server, ``tm_ts_sdk.cjs``, answers the same documents).

    search_products(category, limit)      GET /products?category&limit; INCR tm:searches:<category>
    get_user_cart(user_id)                GET /users/<id>; LRANGE tm:recent:<user> 0 9
    checkout(user_id, product_id, qty)    GET /products/<id>; MULTI INCR tm:orders, LPUSH + LTRIM
                                          tm:recent:<user>, HINCRBY tm:sales <product> <qty>
"""

from __future__ import annotations

import os
from typing import Any

import httpx
import orjson
import redis.asyncio as aioredis

_clients: dict[str, Any] = {}


def _redis() -> aioredis.Redis:
    client = _clients.get("redis")
    if client is None:
        client = _clients["redis"] = aioredis.Redis.from_url(os.environ["BENCH_REDIS_URL"], max_connections=64)
    return client


def _http() -> httpx.AsyncClient:
    client = _clients.get("http")
    if client is None:
        client = _clients["http"] = httpx.AsyncClient(
            base_url=os.environ["BENCH_API_URL"], timeout=10.0,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))
    return client


async def _get(path: str, **params: Any) -> Any:
    resp = await _http().get(path, params=params or None)
    resp.raise_for_status()
    return orjson.loads(resp.content)


async def search_products(category: str, limit: int = 10) -> str:
    """Products of a category from the catalog API; the search is counted in Redis."""
    items = (await _get("/products", category=category, limit=limit))["items"]
    searches = await _redis().incr(f"tm:searches:{category}")
    return orjson.dumps({"category": category, "count": len(items), "ids": [p["id"] for p in items],
                         "searches": searches}).decode()


async def get_user_cart(user_id: int) -> str:
    """A user from the catalog API and the products they last ordered, from Redis."""
    found = await _get(f"/users/{user_id}")
    recent = await _redis().lrange(f"tm:recent:{user_id}", 0, 9)
    return orjson.dumps({"user_id": user_id, "name": found["name"], "recent": [int(x) for x in recent]}).decode()


async def checkout(user_id: int, product_id: int, quantity: int = 1) -> str:
    """Price a product with the catalog API and record the order in Redis (one transaction)."""
    item = await _get(f"/products/{product_id}")
    async with _redis().pipeline(transaction=True) as pipe:
        pipe.incr("tm:orders")
        pipe.lpush(f"tm:recent:{user_id}", product_id)
        pipe.ltrim(f"tm:recent:{user_id}", 0, 9)
        pipe.hincrby("tm:sales", str(product_id), quantity)
        order_id, *_ = await pipe.execute()
    return orjson.dumps({"order_id": order_id, "user_id": user_id, "product_id": product_id, "quantity": quantity,
                         "total_cents": item["price_cents"] * quantity}).decode()
