"""``MCP_AUTH_MODE=introspection`` with a slow authorization server (a real HTTP server on
loopback that sleeps before each answer): strangers flooding the server with random tokens do
not starve a caller whose token is not cached yet. Calls to the endpoint are bounded per source
address and in all, and sources an active token came from lately keep a budget of their own;
what is over a bound is answered 503 with ``Retry-After`` at once instead of queueing."""

from __future__ import annotations

import asyncio
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import orjson
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mcpcore import Settings
from tests.servers import run_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.serial]

DELAY = 5.0  # seconds the authorization server takes for every answer
BOUND = DELAY + 2.5  # a caller whose token is not cached is answered within this (a loaded 2-core machine)
MAX_CALLS = 64  # OAUTH_INTROSPECTION_MAX_CALLS's default: at most this many of the flood wait on the server
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


class SlowAuthorizationServer:
    """RFC 7662 introspection that sleeps :data:`DELAY` first; tokens starting ``good-`` are active."""

    def __init__(self) -> None:
        self.url = ""
        self.calls = 0

    async def introspect(self, request: Request) -> Response:
        self.calls += 1
        token = (await request.form())["token"]
        await asyncio.sleep(DELAY)
        active = isinstance(token, str) and token.startswith("good-")
        body = {"active": True, "client_id": "app", "sub": token, "exp": int(time.time()) + 300} if active else \
            {"active": False}
        return Response(orjson.dumps(body), media_type="application/json")


@contextmanager
def slow_authorization_server() -> Iterator[SlowAuthorizationServer]:
    auth_server = SlowAuthorizationServer()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    app = Starlette(routes=[Route("/introspect", auth_server.introspect, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", backlog=2048,
                                           timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="slow-as")
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the authorization server did not start"
        time.sleep(0.01)
    auth_server.url = f"http://127.0.0.1:{sock.getsockname()[1]}/introspect"
    try:
        yield auth_server
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with slow_authorization_server() as auth_server, run_server(env={
            "MCP_AUTH_MODE": "introspection", "OAUTH_INTROSPECTION_URL": auth_server.url,
            "OAUTH_INTROSPECTION_TIMEOUT_MS": "15000", "MCP_LOG_LEVEL": "error"}) as url:
        yield url


def client(source: str) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=0)
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=source, limits=limits), timeout=30)


async def call(http: httpx.AsyncClient, url: str, token: str) -> httpx.Response:
    """``tools/list`` with ``token``."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    return await http.post(url, content=orjson.dumps(body), headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list", "authorization": f"Bearer {token}"})


async def _flood_then_a_new_token(url: str, attackers: list[str], legit: str, before: str | None = None) -> None:
    clients = {source: client(source) for source in {*attackers, legit}}
    try:
        if before is not None:  # the legitimate caller's source was seen with an active token before
            assert (await call(clients[legit], url, before)).status_code == 200
        flood = [asyncio.create_task(call(clients[attackers[i % len(attackers)]], url, secrets.token_urlsafe(24)))
                 for i in range(300)]
        # Once the flood is in (what is refused answered: the server's backlog, on a loaded machine,
        # is not what is measured), the strangers' calls still wait on the authorization server.
        deadline = time.monotonic() + DELAY - 1
        while sum(task.done() for task in flood) < len(flood) - MAX_CALLS and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        still_waiting = sum(not task.done() for task in flood)
        started = time.monotonic()
        answer = await call(clients[legit], url, f"good-{secrets.token_hex(8)}")
        took = time.monotonic() - started
        statuses = [r.status_code for r in await asyncio.gather(*flood)]
    finally:
        for http in clients.values():
            await http.aclose()
    assert answer.status_code == 200 and took < BOUND, (answer.status_code, answer.text[:200], took)
    assert still_waiting, "the flood was over before the legitimate call came: nothing was tested"
    assert set(statuses) <= {401, 503}, set(statuses)
    refused = [s for s in statuses if s == 503]
    assert refused, "the flood was not bounded"


async def test_one_source_flooding_does_not_starve_another(mcp_url: str) -> None:
    await _flood_then_a_new_token(mcp_url, ["127.0.0.2"], "127.0.0.3")


async def test_many_sources_flooding_do_not_starve_a_known_one(mcp_url: str) -> None:
    attackers = [f"127.0.1.{i}" for i in range(1, 31)]
    await _flood_then_a_new_token(mcp_url, attackers, "127.0.0.4", before=f"good-{secrets.token_hex(8)}")


def test_the_budgets_are_settings() -> None:
    s = Settings.from_env({"OAUTH_INTROSPECTION_MAX_CALLS": "10", "OAUTH_INTROSPECTION_MAX_CALLS_PER_SOURCE": "2"})
    assert (s.oauth_introspection_max_calls, s.oauth_introspection_max_calls_per_source) == (10, 2)
    defaults = Settings.from_env({})
    assert (defaults.oauth_introspection_max_calls, defaults.oauth_introspection_max_calls_per_source) == (64, 8)
    with pytest.raises(Exception, match="OAUTH_INTROSPECTION_MAX_CALLS_PER_SOURCE"):
        Settings.from_env({"OAUTH_INTROSPECTION_MAX_CALLS_PER_SOURCE": "0"})


async def test_the_budget_counts_calls_not_requests_and_keeps_a_share_for_known_sources() -> None:
    from mcpcore.auth import AuthError
    from tests.auth.test_verifier import Endpoint, verifier

    endpoint = Endpoint()
    endpoint.delay = 0.3
    endpoint.tokens.update({f"good-{i}": endpoint.tokens["good"] for i in range(10)})
    v = verifier(endpoint, max_calls=4, per_source=2)  # strangers share 3 of the 4 calls
    assert await v.verify_token_from("good-0", "10.0.0.9") is not None  # 10.0.0.9 is known from now on
    same = await asyncio.gather(*(v.verify_token_from("good", "10.0.0.1") for _ in range(20)))
    assert all(info is not None for info in same) and endpoint.calls == 2  # one call for twenty requests
    busy = await asyncio.gather(*(v.verify_token_from(f"x{i}", "10.0.0.1") for i in range(3)), return_exceptions=True)
    refused = [e for e in busy if isinstance(e, AuthError)]
    assert len(refused) == 1 and refused[0].status == 503 and refused[0].retry_after == 1  # two per source
    first = [asyncio.create_task(v.verify_token_from(f"y{i}", f"10.0.1.{i}")) for i in range(3)]
    await asyncio.sleep(0.05)  # three strangers' calls in flight: their share is taken
    with pytest.raises(AuthError) as stranger:
        await v.verify_token_from("z", "10.0.2.1")
    assert stranger.value.reason == "introspection_busy"
    assert await v.verify_token_from("good-1", "10.0.0.9") is not None  # a known source still gets the last call
    assert await asyncio.gather(*first) == [None, None, None]
    await v.close()
