"""Task tools for the scale-out tests: what each attempt did is written to ``ctx.state`` (Redis
in those tests), so a test reads it back through any instance with ``read_state``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mcpcore import Context, McpApp, TaskSupport, input_required, tool


class Answer(BaseModel):
    text: str = Field(description="The answer")


@tool(task=TaskSupport("optional", rerun=True))
async def resumable(key: Annotated[str, Field(description="State key of this run")], ctx: Context) -> str:
    """Safe to run again: the first attempt waits (its instance is killed meanwhile); the next
    one finishes at once."""
    runs = int(await ctx.state.get(key) or 0) + 1
    await ctx.state.set(key, runs)
    if runs == 1:
        await asyncio.sleep(3600)
    return f"finished on run {runs}"


@tool(task="optional")
async def fragile(key: Annotated[str, Field(description="State key of this run")], ctx: Context) -> str:
    """Not safe to run again: waits until its instance is killed."""
    await ctx.state.set(key, "started")
    await asyncio.sleep(3600)
    return "unreachable"


@tool(task="optional")
async def ticker(key: Annotated[str, Field(description="State key of the tick count")], ctx: Context) -> str:
    """Count ticks in ctx.state every 100 ms until cancelled; records how it stopped."""
    ticks = 0
    try:
        while True:
            ticks += 1
            await ctx.state.set(key, ticks)
            await asyncio.sleep(0.1)
    except asyncio.CancelledError:
        await asyncio.shield(ctx.state.set(key + "-stopped", {"ticks": ticks, "signal": ctx.signal.aborted}))
        raise


@tool(task="optional")
async def ask(ctx: Context) -> str:
    """Ask one question, then echo the answer."""
    answer = ctx.inputs.accepted("q", Answer)
    if answer is None:
        return ctx.request_input({"q": input_required.elicit("Say something", Answer)})
    return f"you said {answer.text}"


@tool
async def read_state(key: Annotated[str, Field(description="State key to read")], ctx: Context) -> Any:
    """Read a value the task tools wrote."""
    return {"value": await ctx.state.get(key)}


app = McpApp("tasks-scale", "1.0.0", tools=[resumable, fragile, ticker, ask, read_state])
