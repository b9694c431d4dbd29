"""Tools for the bounds of the 2024-11-05 HTTP+SSE transport: a large answer (to fill a stream
whose client does not read) and a slow one (to keep requests in flight)."""

from __future__ import annotations

import asyncio

from mcpcore import McpApp, tool


@tool
def big(size: int) -> str:
    """An answer of ``size`` characters."""
    return "x" * size


@tool
async def wait(seconds: float) -> str:
    """Answer after ``seconds``."""
    await asyncio.sleep(seconds)
    return "waited"


app = McpApp("sse-bounds", "1.0.0", tools=[big, wait])
