"""An app whose tool logs through ``ctx.log`` (logging and metrics under several workers)."""

from __future__ import annotations

from mcpcore import Context, McpApp, tool


@tool
async def shout(text: str, ctx: Context) -> str:
    """Log a line, then answer ``text`` in capitals."""
    ctx.log.info("shouting", {"text": text})
    return text.upper()


app = McpApp("logged", "1.0.0", tools=[shout])
