"""Long-lived streams per caller, well below the connection bound: one caller (an identity, or
with auth off a source address) holding its most ``subscriptions/listen`` streams is refused
another long-lived stream of any kind (listen, a 2025 GET stream, an HTTP+SSE stream) with 503
and ``Retry-After``, while another caller still gets each. A real server on loopback."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import httpx
import orjson
import pytest

from mcpcore import Settings
from mcpcore.testing import McpTestClient, parse_sse
from tests.auth.test_http_auth import SECRET, bearer, token

from .servers import run_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
LISTEN_H = {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen"}
ENV = {"MCP_HTTP_MAX_CONNECTIONS": "40", "MCP_HTTP_LEGACY_SSE": "true", "MCP_LOG_LEVEL": "warning"}
PER_CALLER = 10  # the default: a quarter of MCP_HTTP_MAX_CONNECTIONS, at most 32


@dataclass(frozen=True)
class Caller:
    """Who opens streams: connections from ``source`` (an address of 127/8), with ``auth`` headers."""

    source: str
    auth: dict[str, str] = field(default_factory=dict)

    def http(self, stack: contextlib.AsyncExitStack) -> httpx.AsyncClient:
        http = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=self.source), headers=self.auth,
                                 timeout=10)
        stack.push_async_callback(http.aclose)
        return http


async def listen(stack: contextlib.AsyncExitStack, who: Caller, url: str) -> httpx.Response:
    """Open a listen stream (kept open by ``stack``): the response, its acknowledgement read."""
    http = who.http(stack)
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
            "params": {"_meta": META, "notifications": {"toolsListChanged": True}}}
    resp = await stack.enter_async_context(http.stream("POST", url, content=orjson.dumps(body), headers=LISTEN_H))
    if resp.status_code == 200:
        events = parse_sse(resp.aiter_lines())
        stack.push_async_callback(events.aclose)  # referenced until the end: collected, it would close the stream
        ack = await anext(events)
        assert orjson.loads(ack["data"])["method"] == "notifications/subscriptions/acknowledged"
    else:
        await resp.aread()
    return resp


async def get_stream(stack: contextlib.AsyncExitStack, who: Caller, url: str) -> httpx.Response:
    """A 2025 session's GET stream."""
    c = McpTestClient(url=url, initialize=False)
    await stack.enter_async_context(c)
    await c.http.aclose()
    c.http = who.http(stack)
    await c.initialize()
    resp, _ = await c.open_stream()
    stack.push_async_callback(resp.aclose)
    if resp.status_code != 200:
        await resp.aread()
    return resp


async def sse_stream(stack: contextlib.AsyncExitStack, who: Caller, url: str) -> httpx.Response:
    """An HTTP+SSE (2024-11-05) stream."""
    resp = await stack.enter_async_context(who.http(stack).stream("GET", url.replace("/mcp", "/sse")))
    if resp.status_code != 200:
        await resp.aread()
    return resp


def refused(resp: httpx.Response) -> bool:
    return (resp.status_code == 503 and resp.headers.get("retry-after") is not None
            and resp.json()["error"]["data"]["reason"] == "too_many_streams")


async def _holds_its_most(url: str, first: Caller, second: Caller) -> None:
    async with contextlib.AsyncExitStack() as stack:
        held = [await listen(stack, first, url) for _ in range(PER_CALLER)]
        assert [r.status_code for r in held] == [200] * PER_CALLER
        over = [await listen(stack, first, url), await get_stream(stack, first, url),
                await sse_stream(stack, first, url)]
        assert all(refused(r) for r in over), [r.status_code for r in over]
        others = [await listen(stack, second, url), await get_stream(stack, second, url),
                  await sse_stream(stack, second, url)]
        assert [r.status_code for r in others] == [200, 200, 200]
    async with contextlib.AsyncExitStack() as stack:  # given back when they close
        assert (await listen(stack, first, url)).status_code == 200


async def test_one_address_holds_its_most_streams_another_still_gets_one() -> None:
    with run_server(env=ENV) as url:
        await _holds_its_most(url, Caller("127.0.0.2"), Caller("127.0.0.3"))


async def test_one_identity_holds_its_most_streams_another_still_gets_one() -> None:
    env = {**ENV, "MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SECRET}
    with run_server(env=env) as url:  # both from one address: the identities count, not the address
        alice, bob = Caller("127.0.0.2", bearer(token("alice"))), Caller("127.0.0.2", bearer(token("bob")))
        await _holds_its_most(url, alice, bob)


def test_the_bound_is_a_setting_below_the_connection_bound() -> None:
    assert Settings.from_env({}).streams_per_caller() == 32
    assert Settings.from_env({"MCP_HTTP_MAX_CONNECTIONS": "40"}).streams_per_caller() == 10
    assert Settings.from_env({"MCP_HTTP_MAX_CONNECTIONS": "2"}).streams_per_caller() == 1
    assert Settings.from_env({"MCP_HTTP_MAX_STREAMS_PER_IDENTITY": "3"}).streams_per_caller() == 3
    with pytest.raises(Exception, match="MCP_HTTP_MAX_STREAMS_PER_IDENTITY"):
        Settings.from_env({"MCP_HTTP_MAX_STREAMS_PER_IDENTITY": "0"})
