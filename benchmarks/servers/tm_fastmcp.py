"""FastMCP 4.2 server of the TM-style workload (the tools of :mod:`_tm_tools`).

``FastMCP`` with ``@mcp.tool``, ``http_app(json_response=True)``; stateful for the per-call-session
form (``BENCH_STATELESS=0``), as the published benchmark ran it.
"""

from __future__ import annotations

import _tm_tools as tm
from _peer_env import JSON_RESPONSE, STATELESS
from fastmcp import FastMCP

mcp = FastMCP("tm-bench", version="1.0")


@mcp.tool
async def search_products(category: str, limit: int = 10) -> str:
    """Products of a category from the catalog API; the search is counted in Redis."""
    return await tm.search_products(category, limit)


@mcp.tool
async def get_user_cart(user_id: int) -> str:
    """A user and the products they last ordered."""
    return await tm.get_user_cart(user_id)


@mcp.tool
async def checkout(user_id: int, product_id: int, quantity: int = 1) -> str:
    """Price a product and record the order."""
    return await tm.checkout(user_id, product_id, quantity)


app = mcp.http_app(path="/mcp", json_response=JSON_RESPONSE, stateless_http=STATELESS)
