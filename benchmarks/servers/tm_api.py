"""The small HTTP API the TM-style workload's tools call (``tm_*`` servers), in pure ASGI.

The harness starts it under uvicorn on the load CPU, beside redis-server and wrk. It holds a
deterministic catalog in memory (its answers are precomputed bytes, so it costs the servers under
test as little time as an HTTP service can):

    GET /products/<id>                      one product: id, name, category, price_cents
    GET /products?category=<c>&limit=<n>    the first n products of a category (n <= 50)
    GET /users/<id>                         one user: id, name, tier

The same catalog is what the harness checks the tools' answers against (it asks this API itself).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import orjson

PRODUCTS = 10_000
USERS = 1_000
CATEGORIES = ("books", "music", "garden", "kitchen", "toys", "tools", "sports", "office")
MAX_LIMIT = 50


def product(i: int) -> dict[str, Any]:
    """Product ``i`` (1-based) of the catalog."""
    return {"id": i, "name": f"Product {i}", "category": CATEGORIES[i % len(CATEGORIES)],
            "price_cents": 100 + (i * 37) % 9_900}


def user(i: int) -> dict[str, Any]:
    """User ``i`` (1-based)."""
    return {"id": i, "name": f"User {i}", "tier": ("basic", "plus", "pro")[i % 3]}


_PRODUCT = {i: orjson.dumps(product(i)) for i in range(1, PRODUCTS + 1)}
_USER = {i: orjson.dumps(user(i)) for i in range(1, USERS + 1)}
_BY_CATEGORY = {c: [product(i) for i in range(1, PRODUCTS + 1) if product(i)["category"] == c][:MAX_LIMIT]
                for c in CATEGORIES}
_SEARCH: dict[tuple[str, int], bytes] = {}
_JSON = [(b"content-type", b"application/json")]
_NOT_FOUND = b'{"error":"not found"}'


def _answer(path: str, query: bytes) -> tuple[int, bytes]:
    parts = path.strip("/").split("/")
    try:
        if parts[0] == "products" and len(parts) == 2:
            return 200, _PRODUCT[int(parts[1])]
        if parts[0] == "users" and len(parts) == 2:
            return 200, _USER[int(parts[1])]
        if parts == ["products"]:
            q = parse_qs(query.decode())
            key = (q["category"][0], min(MAX_LIMIT, int(q.get("limit", ["10"])[0])))
            body = _SEARCH.get(key)
            if body is None:
                body = _SEARCH[key] = orjson.dumps({"items": _BY_CATEGORY[key[0]][:key[1]]})
            return 200, body
    except (KeyError, ValueError, IndexError):
        pass
    return 404, _NOT_FOUND


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    status, body = _answer(scope["path"], scope["query_string"]) if scope["method"] == "GET" else (405, b"{}")
    await send({"type": "http.response.start", "status": status,
                "headers": [*_JSON, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
