"""Official ``mcp`` 2.3 SDK server of the TM-style workload (the tools of :mod:`_tm_tools`).

``MCPServer`` with ``@mcp.tool()``, served by ``streamable_http_app`` with JSON responses. The
per-call-session form runs it stateful (``BENCH_STATELESS=0``: initialize opens a session that
DELETE ends); 2026-07-28 requests go to the SDK's sessionless handler whatever the switch says.
"""

from __future__ import annotations

import _tm_tools as tm
from _peer_env import JSON_RESPONSE, STATELESS
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("tm-bench", version="1.0", log_level="WARNING")


@mcp.tool()
async def search_products(category: str, limit: int = 10) -> str:
    """Products of a category from the catalog API; the search is counted in Redis."""
    return await tm.search_products(category, limit)


@mcp.tool()
async def get_user_cart(user_id: int) -> str:
    """A user and the products they last ordered."""
    return await tm.get_user_cart(user_id)


@mcp.tool()
async def checkout(user_id: int, product_id: int, quantity: int = 1) -> str:
    """Price a product and record the order."""
    return await tm.checkout(user_id, product_id, quantity)


app = mcp.streamable_http_app(streamable_http_path="/mcp", json_response=JSON_RESPONSE, stateless_http=STATELESS)
