"""A bare Starlette endpoint: orjson in, the same JSON-RPC result shape out, no validation.

The "hand-written endpoint" baseline of issue 9: what a developer gets by skipping any MCP
framework and answering the JSON-RPC with Starlette's own request/response objects.
"""

from __future__ import annotations

from _bare import answer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


async def mcp(request: Request) -> Response:
    status, extra, body, events = answer(await request.body())
    headers = {k.decode(): v.decode() for k, v in extra}
    if events is not None:
        async def stream():  # type: ignore[no-untyped-def]
            for chunk in events:
                yield chunk
        return StreamingResponse(stream(), status_code=status, media_type="text/event-stream",
                                 headers={"cache-control": "no-cache, no-transform", **headers})
    if status == 202:
        return Response(status_code=202, headers=headers)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


app = Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])
