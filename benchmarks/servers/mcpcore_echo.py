"""mcpcore echo server for the benchmark harness (runs in the project's own .venv).

Settings come from the environment as for any mcpcore app (the harness sets
``MCP_LOG_LEVEL=warning`` and, per scenario, ``MCP_SESSION_MODE``, ``MCP_SESSION_STORE``,
``REDIS_URL`` and ``MCP_HTTP_RESUMABILITY``). ``BENCH_TASKS=1`` adds ``echo_task``, the same echo
as a task tool, and ``wait_task`` (the ``tasks_get`` scenario); every other scenario runs without them.
"""

from __future__ import annotations

import os

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

if os.environ.get("BENCH_TASKS") == "1":
    import asyncio

    @tool(task="optional")
    async def echo_task(text: str) -> str:
        """Return the text unchanged, as a task when the client takes tasks."""
        return text

    @tool(task="optional")
    async def wait_task(seconds: float) -> str:
        """Wait, as a task when the client takes tasks (a task that stays working)."""
        await asyncio.sleep(seconds)
        return "waited"

    app.include(echo_task, wait_task)
