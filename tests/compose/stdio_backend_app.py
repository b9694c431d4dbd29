"""The stdio server the stdio-backend tests proxy: it logs, asks, and remembers per process."""

from __future__ import annotations

import asyncio
import os

from pydantic import BaseModel

from mcpcore import Context, McpApp, tool


class Name(BaseModel):
    name: str


calls = 0
cancelled = 0


@tool
def whoami() -> dict[str, int]:
    """This process's id, how many times it was called, and how many calls it saw cancelled."""
    global calls
    calls += 1
    return {"pid": os.getpid(), "calls": calls, "cancelled": cancelled}


@tool
async def chatty(ctx: Context, seconds: float = 0.0) -> str:
    """Logs a line (after ``seconds``)."""
    await asyncio.sleep(seconds)
    ctx.log.info("hello from the backend")
    return "said hello"


@tool
async def wait(seconds: float) -> str:
    """Sleeps, silently (counting a cancellation)."""
    global cancelled
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        cancelled += 1
        raise
    return "waited"


@tool
async def ask(ctx: Context) -> str:
    """Asks the caller's name."""
    answer = await ctx.elicit("Your name?", Name)
    return f"hi {answer.data.name if answer.data else 'nobody'}"


app = McpApp("stdio-backend", "1.0.0", tools=[whoami, chatty, wait, ask])
