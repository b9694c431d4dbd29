"""The 2024-11-05 HTTP+SSE transport passes the same door as /mcp: with auth on, no token means
401 on both routes, a stream is bound to the identity that opened it, and tenants come from
the token (never the shared default)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import jwt
import pytest

from mcpcore import _json

from .servers import run_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SECRET = "k" * 40


def token(sub: str, tid: str = "acme") -> str:
    return jwt.encode({"sub": sub, "cid": "app", "tid": tid, "exp": int(time.time()) + 300}, SECRET,
                      algorithm="HS256")


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    env = {"MCP_HTTP_LEGACY_SSE": "true", "MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SECRET,
           "MCP_MAX_SESSIONS_PER_IDENTITY": "3"}
    with run_server("tests.apps.whoami:app", env=env) as url:
        yield url.rsplit("/mcp", 1)[0]


class SseConnection:
    """A raw /sse stream: the endpoint it named and the messages that follow."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.aiter_lines()
        self.endpoint = ""

    async def next_event(self) -> tuple[str, str]:
        name, data = "message", []
        async for line in self.lines:
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                return name, "\n".join(data)
        raise AssertionError("stream ended")

    async def message(self) -> dict[str, Any]:
        while True:
            name, data = await asyncio.wait_for(self.next_event(), 10)
            if name == "message":
                return dict(_json.loads(data))


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


async def open_stream(http: httpx.AsyncClient, base: str, tok: str) -> tuple[SseConnection, Any]:
    cm = http.stream("GET", f"{base}/sse", headers={"accept": "text/event-stream", "authorization": f"Bearer {tok}"})
    response = await cm.__aenter__()
    assert response.status_code == 200
    conn = SseConnection(response)
    name, conn.endpoint = await conn.next_event()
    assert name == "endpoint"
    return conn, cm


async def post(http: httpx.AsyncClient, base: str, conn: SseConnection, msg: dict[str, Any],
               tok: str | None) -> httpx.Response:
    headers = {"authorization": f"Bearer {tok}"} if tok else {}
    return await http.post(base + conn.endpoint, json=msg, headers=headers)


async def test_no_token_is_refused_on_both_routes(base: str, http: httpx.AsyncClient) -> None:
    r = await http.get(f"{base}/sse", headers={"accept": "text/event-stream"})
    assert r.status_code == 401 and "resource_metadata=" in r.headers["www-authenticate"]
    r = await http.post(f"{base}/messages?session_id=0123", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert r.status_code == 401
    r = await http.get(f"{base}/sse", headers={"accept": "text/event-stream", "authorization": "Bearer nope"})
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]


async def test_a_stream_serves_only_its_identity_and_its_tenant(base: str, http: httpx.AsyncClient) -> None:
    alice = token("alice")
    conn, cm = await open_stream(http, base, alice)
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
        # Without a token, and with another identity's token, the stream's messages route refuses.
        assert (await post(http, base, conn, init, None)).status_code == 401
        assert (await post(http, base, conn, init, token("mallory"))).status_code == 404
        assert (await post(http, base, conn, init, token("alice", tid="other"))).status_code == 404
        assert (await post(http, base, conn, init, alice)).status_code == 202
        assert (await conn.message())["id"] == 1
        assert (await post(http, base, conn, call, alice)).status_code == 202
        answer = await conn.message()
        assert answer["result"]["structuredContent"] == {"subject": "alice", "tenant": "acme", "state": "alice"}
    finally:
        await cm.__aexit__(None, None, None)


async def test_streams_per_identity_are_capped(base: str, http: httpx.AsyncClient) -> None:
    bob = token("bob")
    opened = [await open_stream(http, base, bob) for _ in range(3)]
    try:
        r = await http.get(f"{base}/sse", headers={"accept": "text/event-stream", "authorization": f"Bearer {bob}"})
        assert r.status_code == 503 and r.headers["retry-after"]
        _, cm = await open_stream(http, base, token("carol"))
        await cm.__aexit__(None, None, None)
    finally:
        for _, cm in opened:
            await cm.__aexit__(None, None, None)


async def test_depth_limit_applies_to_messages(base: str, http: httpx.AsyncClient) -> None:
    alice = token("alice")
    conn, cm = await open_stream(http, base, alice)
    try:
        deep: Any = {}
        for _ in range(100):
            deep = {"a": deep}
        msg = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": deep}
        r = await post(http, base, conn, msg, alice)
        assert r.status_code == 400 and "nested deeper" in r.json()["error"]["message"]
    finally:
        await cm.__aexit__(None, None, None)
