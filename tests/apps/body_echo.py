"""A plain ASGI app for the HTTP server's limits: it reads each body to its end and reports how
it went, so tests see what the app's ``receive()`` was given.

``POST /echo`` answers the body's length; ``GET /healthz`` 200; ``GET /seen`` the count of
requests whose ``receive()`` ended in ``http.disconnect`` before the body's end. A WebSocket
echoes each text message.
"""

from __future__ import annotations

from typing import Any

DISCONNECTS = 0


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global DISCONNECTS
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["type"] == "websocket":
        while (event := await receive())["type"] != "websocket.disconnect":
            if event["type"] == "websocket.connect":
                await send({"type": "websocket.accept"})
            else:
                await send({"type": "websocket.send", "text": event.get("text") or ""})
        return
    if scope["path"] == "/echo":
        size = 0
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                DISCONNECTS += 1
                await _answer(send, 499, b"disconnected")  # dropped: the connection is gone
                return
            size += len(event.get("body", b""))
            if not event.get("more_body"):
                break
        await _answer(send, 200, str(size).encode())
    elif scope["path"] == "/seen":
        await _answer(send, 200, str(DISCONNECTS).encode())
    else:
        await _answer(send, 200 if scope["path"] == "/healthz" else 404, b"ok")


async def _answer(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
