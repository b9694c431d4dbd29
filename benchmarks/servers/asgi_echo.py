"""Pure ASGI, orjson in and out, no validation and no framework: the limit.

What a Python ASGI endpoint on uvicorn (uvloop + httptools) can do at best for this exchange.
"""

from __future__ import annotations

from typing import Any

from _bare import JSON_HEADERS, SSE_HEADERS, answer

_404 = b'{"error":"not found"}'


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    if scope["path"] != "/mcp" or scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 404, "headers": JSON_HEADERS})
        await send({"type": "http.response.body", "body": _404})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    status, extra, out, events = answer(body)
    if events is not None:
        await send({"type": "http.response.start", "status": status, "headers": SSE_HEADERS + extra})
        for chunk in events:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    headers = ([*JSON_HEADERS, (b"content-length", str(len(out)).encode())] if status != 202
               else [(b"content-length", b"0")]) + extra
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": out})
