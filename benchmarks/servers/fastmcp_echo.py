"""FastMCP 4.2.3 echo server (runs in benchmarks/.venv-peers).

``FastMCP`` with ``@mcp.tool`` served by ``http_app`` with ``json_response=True,
stateless_http=True`` (FastMCP's documented setting for horizontally scaled deployments) unless the
scenario needs a session (``BENCH_STATELESS=0``) or an SSE response (``BENCH_JSON_RESPONSE=0``).
"""

from __future__ import annotations

from _peer_env import JSON_RESPONSE, STATELESS
from fastmcp import Context, FastMCP

DOC = "mcpcore benchmark document: a short text resource."

mcp = FastMCP("bench", version="1.0")


@mcp.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool
async def echo_logged(text: str, ctx: Context) -> str:
    """Log three lines to the client, then return the text."""
    await ctx.info("echo: start")
    await ctx.info("echo: working")
    await ctx.info("echo: done")
    return text


@mcp.resource("bench://doc", name="doc", mime_type="text/plain", description="A short text document")
async def doc() -> str:
    return DOC


app = mcp.http_app(path="/mcp", json_response=JSON_RESPONSE, stateless_http=STATELESS)
