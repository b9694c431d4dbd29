"""What the two bare endpoints answer: JSON-RPC parsed and produced with orjson, no validation.

Shared by ``starlette_echo`` and ``asgi_echo`` so both answer exactly the same bytes. The result
shapes copy mcpcore's (``content`` + ``structuredContent``; on 2026-07-28 also ``resultType`` and
``_meta.serverInfo``) so every server sends comparable payloads. Nothing is checked: no
envelope, no headers, no session lookup, no argument schema. That is the point: these are the
floor a framework is measured against, not MCP servers.
"""

from __future__ import annotations

import secrets
from typing import Any

import orjson

DOC = "mcpcore benchmark document: a short text resource."
META_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "bench", "version": "1.0"}}
_SCHEMA_IN = {"additionalProperties": False, "properties": {"text": {"type": "string"}}, "required": ["text"],
              "type": "object"}
_SCHEMA_OUT = {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
TOOLS = [
    {"name": "echo", "description": "Return the text unchanged.", "inputSchema": _SCHEMA_IN,
     "outputSchema": _SCHEMA_OUT},
    {"name": "echo_logged", "description": "Log three lines to the client, then return the text.",
     "inputSchema": _SCHEMA_IN, "outputSchema": _SCHEMA_OUT},
]
LOG_LINES = ("echo: start", "echo: working", "echo: done")

JSON_HEADERS = [(b"content-type", b"application/json")]
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform")]


def _result(msg: dict[str, Any], result: dict[str, Any]) -> bytes:
    params = msg.get("params")
    if params and META_KEY in (params.get("_meta") or ()):
        result["resultType"] = "complete"
        result["_meta"] = SERVER_META
    return orjson.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "result": result})


def _event(data: bytes) -> bytes:
    return b"event: message\ndata: " + data + b"\n\n"


def answer(body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes, list[bytes] | None]:
    """``(status, extra headers, JSON body, SSE events or None)`` for one POSTed message."""
    msg = orjson.loads(body)
    method = msg.get("method")
    if "id" not in msg:  # a notification
        return 202, [], b"", None
    params = msg.get("params") or {}
    if method == "tools/call":
        text = (params.get("arguments") or {}).get("text")
        res = _result(msg, {"content": [{"type": "text", "text": text}], "structuredContent": {"result": text}})
        if params.get("name") == "echo_logged":
            events = [_event(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {
                "level": "info", "data": {"message": line}, "logger": "tool:echo_logged"}})) for line in LOG_LINES]
            events.append(_event(res))
            return 200, [], b"", events
        return 200, [], res, None
    if method == "tools/list":
        return 200, [], _result(msg, {"tools": TOOLS}), None
    if method == "resources/read":
        return 200, [], _result(msg, {"contents": [{"uri": params.get("uri"), "mimeType": "text/plain",
                                                    "text": DOC}]}), None
    if method == "initialize":
        res = _result(msg, {"protocolVersion": params.get("protocolVersion"),
                            "capabilities": {"tools": {}, "resources": {}, "logging": {}},
                            "serverInfo": {"name": "bench", "version": "1.0"}})
        return 200, [(b"mcp-session-id", secrets.token_hex(32).encode())], res, None
    return 200, [], _result(msg, {}), None
