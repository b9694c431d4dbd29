"""A small app for stream and disconnect tests under a real uvicorn."""

from __future__ import annotations

import asyncio

from mcpcore import Context, McpApp, tool

RUNS: dict[str, str] = {}


@tool
async def ticker(run: str, ticks: int, ctx: Context) -> str:
    """Log a line every 50 ms; records how the run ended."""
    RUNS[run] = "running"
    try:
        for i in range(ticks):
            ctx.log.info(f"tick {i}")
            await asyncio.sleep(0.05)
    except asyncio.CancelledError:
        RUNS[run] = f"cancelled:{ctx.signal.aborted}"
        raise
    RUNS[run] = "completed"
    return "done"


@tool
async def burst(n: int, ctx: Context) -> str:
    """Log n lines as fast as possible, then answer."""
    for i in range(n):
        ctx.log.info(f"burst {i}")
    return f"burst of {n} done"


@tool
def status(run: str) -> str:
    """How a ticker run ended."""
    return RUNS.get(run, "unknown")


app = McpApp("streaming", "1.0", tools=[ticker, burst, status])
