"""mcpcore server of the TM-style workload: the three I/O tools of :mod:`_tm_tools` as ``@tool``s.

Settings come from the environment as for any mcpcore app (``MCP_SESSION_MODE``,
``MCP_SESSION_STORE``, ``REDIS_URL`` for the session store; the tools' own Redis and API are
``BENCH_REDIS_URL`` and ``BENCH_API_URL``).
"""

from __future__ import annotations

import _tm_tools as tm

from mcpcore import McpApp, tool


@tool
async def search_products(category: str, limit: int = 10) -> str:
    """Products of a category from the catalog API; the search is counted in Redis."""
    return await tm.search_products(category, limit)


@tool
async def get_user_cart(user_id: int) -> str:
    """A user and the products they last ordered."""
    return await tm.get_user_cart(user_id)


@tool
async def checkout(user_id: int, product_id: int, quantity: int = 1) -> str:
    """Price a product and record the order."""
    return await tm.checkout(user_id, product_id, quantity)


app = McpApp("tm-bench", "1.0", tools=[search_products, get_user_cart, checkout])
