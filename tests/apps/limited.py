"""An app limited to 10 tool calls per second per identity across every instance on one Redis
(the rate-limit tests start two); ``stamp`` answers with this process's wall-clock time."""

from __future__ import annotations

import os
import time

from mcpcore import McpApp, tool
from mcpcore.middleware import RateLimit


@tool
async def stamp() -> float:
    """The server's time when the call was admitted."""
    return time.time()


app = McpApp("limited", "1.0.0", tools=[stamp],
             middleware=[RateLimit(int(os.environ.get("LIMIT", "10")), per=1.0, key="identity", backend="redis")])
