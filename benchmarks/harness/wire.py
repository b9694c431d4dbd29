"""MCP on the wire as the harness speaks it: the request of a scenario, its headers, the check of
an answer, opening a 2025 session, and reading a raw HTTP/1.1 response."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson

from .config import ACCEPT, DOC, LEGACY, MODERN, TEXT, ServerFailed
from .scenario import Scenario


def echo_call(name: str = "echo") -> dict[str, Any]:
    """The params of a tools/call of ``name`` with the benchmark's text."""
    return {"name": name, "arguments": {"text": TEXT}}


def request_message(sc: Scenario, rid: int = 1) -> dict[str, Any]:
    """The scenario's JSON-RPC request (2026-07-28 requests carry their ``_meta``)."""
    params = dict(sc.params)
    if sc.wire == "modern":
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": sc.capabilities}
    return {"jsonrpc": "2.0", "id": rid, "method": sc.method, "params": params}


def request_headers(sc: Scenario, session_id: str | None) -> dict[str, str]:
    """The scenario's HTTP headers: routing headers on 2026-07-28, the session on 2025."""
    h = {"Content-Type": "application/json", "Accept": ACCEPT}
    if sc.wire == "modern":
        h["MCP-Protocol-Version"] = MODERN
        h["Mcp-Method"] = sc.method
        name = sc.params.get("name") or sc.params.get("uri") or sc.params.get("taskId")
        if name:
            h["Mcp-Name"] = name
    else:
        h["MCP-Protocol-Version"] = LEGACY
        if session_id:
            h["Mcp-Session-Id"] = session_id
    return h


def parse_response(resp: httpx.Response) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON-RPC messages of a response (one for JSON, every event for SSE) and the SSE ids."""
    ctype = resp.headers.get("content-type", "")
    if ctype.startswith("text/event-stream"):
        messages, ids = [], []
        for block in resp.text.replace("\r\n", "\n").split("\n\n"):
            data = [ln[5:].lstrip() for ln in block.split("\n") if ln.startswith("data:")]
            ids += [ln[3:].strip() for ln in block.split("\n") if ln.startswith("id:")]
            if data and "".join(data).strip():
                messages.append(orjson.loads("".join(data)))
        return messages, ids
    return [orjson.loads(resp.content)], []


def verify(sc: Scenario, resp: httpx.Response) -> dict[str, Any]:
    """Check one response of the scenario; raises ServerFailed with the reason."""
    if resp.status_code != 200:
        raise ServerFailed(f"HTTP {resp.status_code}: {resp.text[:300]}")
    messages, ids = parse_response(resp)
    final = [m for m in messages if "id" in m and ("result" in m or "error" in m)]
    if len(final) != 1:
        raise ServerFailed(f"expected one JSON-RPC response, got {len(final)}: {resp.text[:300]}")
    msg = final[0]
    if "error" in msg:
        raise ServerFailed(f"JSON-RPC error: {msg['error']}")
    result = msg["result"]
    notes = [m for m in messages if m.get("method") == "notifications/message"]
    if sc.expect in ("echo", "echo_sse"):
        content = result.get("content") or [{}]
        if result.get("isError") or content[0].get("text") != TEXT:
            raise ServerFailed(f"wrong tools/call result: {result}")
    elif sc.expect == "tools":
        names = {t.get("name") for t in result.get("tools", [])}
        if not {"echo", "echo_logged"} <= names:
            raise ServerFailed(f"tools/list lacks the echo tools: {sorted(names)}")
    elif sc.expect == "doc":
        contents = result.get("contents") or [{}]
        if contents[0].get("text") != DOC:
            raise ServerFailed(f"wrong resources/read result: {result}")
    if sc.expect == "echo_sse":
        if not resp.headers.get("content-type", "").startswith("text/event-stream"):
            raise ServerFailed("expected an SSE response")
        if len(notes) != 3:
            raise ServerFailed(f"expected 3 notifications/message before the result, got {len(notes)}")
    elif notes:
        raise ServerFailed(f"unexpected notifications: {notes}")
    return {"content_type": resp.headers.get("content-type", "").split(";")[0], "bytes": len(resp.content),
            "sse_events": len(messages) if ids or resp.headers.get("content-type", "").startswith(
                "text/event-stream") else 0, "sse_ids": len(ids)}


def open_session(client: httpx.Client, url: str, log_level: str | None) -> dict[str, Any]:
    """initialize + notifications/initialized (and logging/setLevel when asked): the session id."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
    r = client.post(url, content=orjson.dumps(init), headers={"Content-Type": "application/json", "Accept": ACCEPT})
    if r.status_code != 200:
        raise ServerFailed(f"initialize answered HTTP {r.status_code}: {r.text[:300]}")
    sid = r.headers.get("mcp-session-id")
    if not sid:
        raise ServerFailed("initialize returned no Mcp-Session-Id")
    h = {"Content-Type": "application/json", "Accept": ACCEPT, "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
    r = client.post(url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=h)
    if r.status_code not in (200, 202):
        raise ServerFailed(f"notifications/initialized answered HTTP {r.status_code}")
    out: dict[str, Any] = {"session_id": sid}
    if log_level:
        msg = {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": log_level}}
        r = client.post(url, content=orjson.dumps(msg), headers=h)
        try:
            messages, _ = parse_response(r)
            ok = r.status_code == 200 and any("result" in m for m in messages)
        except Exception:
            ok = False
        # Not fatal: a server may send logs without it (the verifier checks they arrive).
        out["set_level"] = "ok" if ok else f"refused (HTTP {r.status_code}: {r.text[:120]})"
    return out


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response: status, lower-cased headers, body (content-length or chunked)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(parts)
    else:
        body = b""
    return status, headers, body
