"""mcpcore echo server for the benchmark harness (runs in the project's own .venv).

Settings come from the environment as for any mcpcore app (the harness sets
``MCP_LOG_LEVEL=warning`` and, per scenario, ``MCP_SESSION_MODE``, ``MCP_SESSION_STORE``,
``REDIS_URL`` and ``MCP_HTTP_RESUMABILITY``).
"""

from __future__ import annotations

from mcpcore import Context, McpApp, resource, tool

DOC = "mcpcore benchmark document: a short text resource."


@tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
async def echo_logged(text: str, ctx: Context) -> str:
    """Log three lines to the client, then return the text."""
    ctx.log.info("echo: start")
    ctx.log.info("echo: working")
    ctx.log.info("echo: done")
    return text


@resource("bench://doc", name="doc", mime_type="text/plain", description="A short text document")
async def doc() -> str:
    return DOC


app = McpApp("bench", "1.0", tools=[echo, echo_logged], resources=[doc])
