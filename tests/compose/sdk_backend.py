"""An official ``mcp`` 2.3 SDK server (``MCPServer``) as a proxied backend: 2025-era sessions,
SSE answers, a tool that reports progress and logs. A thin ASGI layer answers ``/healthz`` and
counts the ``initialize`` requests the SDK answers (``GET /initializes``)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("py-sdk", version="1.0")
INITIALIZES: list[str] = []


@mcp.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
async def slow_echo(text: str, ctx: Context) -> str:
    """Report progress twice and log once, then return the text."""
    await ctx.report_progress(1, 2)
    await ctx.info("halfway")
    await ctx.report_progress(2, 2)
    return text


@mcp.prompt()
def greet(name: str) -> str:
    """A greeting."""
    return f"Hello, {name}"


@mcp.resource("py://motd", name="motd", mime_type="text/plain", description="Message of the day")
async def motd() -> str:
    return "be kind"


sdk = mcp.streamable_http_app(streamable_http_path="/mcp", json_response=False, stateless_http=False)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and scope["path"] in ("/healthz", "/initializes"):
        body = b"ok" if scope["path"] == "/healthz" else json.dumps(
            {"caller": INITIALIZES.count("caller"), "own": INITIALIZES.count("own")}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})
        return
    if scope["type"] != "http" or scope["method"] != "POST":
        await sdk(scope, receive, send)
        return
    chunks: list[dict[str, Any]] = []
    while True:
        msg = await receive()
        chunks.append(msg)
        if not msg.get("more_body"):
            break
    try:
        sent = json.loads(b"".join(m.get("body", b"") for m in chunks))
    except ValueError:
        sent = None
    if isinstance(sent, dict) and sent.get("method") == "initialize":
        info = (sent.get("params") or {}).get("clientInfo") or {}
        INITIALIZES.append("own" if info.get("title") == "the proxy's own requests" else "caller")
    replay = iter(chunks)

    async def again() -> dict[str, Any]:
        return next(replay, None) or await receive()

    await sdk(scope, again, send)
