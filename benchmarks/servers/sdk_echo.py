"""Official ``mcp`` 2.3 SDK echo server (runs in benchmarks/.venv-peers).

``MCPServer`` with ``@tool`` (the documented high-level API: pydantic argument validation and an
output schema, like mcpcore's ``@tool``), served by ``streamable_http_app`` in the SDK's
documented production configuration (``stateless_http=True, json_response=True``) unless the
scenario needs a session (``BENCH_STATELESS=0``) or an SSE response (``BENCH_JSON_RESPONSE=0``).
All tools are ``async def``: the SDK runs sync tools in a worker thread.
"""

from __future__ import annotations

import warnings

from _peer_env import JSON_RESPONSE, STATELESS
from mcp.server.mcpserver import Context, MCPServer

warnings.simplefilter("ignore")  # ctx.info is deprecated (SEP-2577) but still delivered on 2025 sessions

DOC = "mcpcore benchmark document: a short text resource."

mcp = MCPServer("bench", version="1.0", log_level="WARNING")


@mcp.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
async def echo_logged(text: str, ctx: Context) -> str:
    """Log three lines to the client, then return the text."""
    await ctx.info("echo: start")
    await ctx.info("echo: working")
    await ctx.info("echo: done")
    return text


@mcp.resource("bench://doc", name="doc", mime_type="text/plain", description="A short text document")
async def doc() -> str:
    return DOC


app = mcp.streamable_http_app(streamable_http_path="/mcp", json_response=JSON_RESPONSE, stateless_http=STATELESS)
