"""The framework's own layers are layers like the user's: one ``Layer`` base, one ordered stack
that ``app.layers`` lists, the HTTP ones run in that order at the door, and startup and shutdown
run through every layer in order and in reverse."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mcpcore import AuthInfo, Call, CallNext, Context, McpApp, Middleware, Settings, tool
from mcpcore.layer import Layer
from mcpcore.state_layer import TenantState
from mcpcore.transports.buffering import EventBuffering
from mcpcore.transports.http.door import Authentication, BodyLimit, CorsPolicy, HostOriginGuard
from mcpcore.transports.http.eras import SessionOrEnvelope

pytestmark = pytest.mark.anyio
FRAMEWORK = ["host and origin guard", "cors", "auth", "body limit", "session or envelope", "state", "event buffer"]


@tool
async def counted(ctx: Context) -> str:
    """Count calls in ctx.state."""
    n = int(await ctx.state.get("n") or 0) + 1
    await ctx.state.set("n", str(n))
    return str(n)


class Keys:
    """A TokenVerifier that records its lifecycle in ``trail``."""

    def __init__(self, trail: list[str]) -> None:
        self.trail = trail

    async def start(self) -> None:
        self.trail.append("auth start")

    async def close(self) -> None:
        self.trail.append("auth close")

    async def verify_token(self, token: str) -> AuthInfo | None:
        return AuthInfo(client_id="c", subject="s", tenant_id="t") if token == "good" else None


class Probe(Middleware):
    """Records its lifecycle, and whether the state layer was open when it started."""

    def __init__(self, trail: list[str], app: list[McpApp]) -> None:
        self.trail = trail
        self.app = app

    async def startup(self, settings: Settings, redis: Any = None) -> None:
        self.trail.append(f"probe start (state open: {self.app[0].services.state is not None})")

    async def shutdown(self) -> None:
        self.trail.append("probe stop")

    async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
        return await call_next(call)


def test_every_layer_is_a_layer_and_app_layers_lists_the_stack_in_order() -> None:
    trail: list[str] = []
    holder: list[McpApp] = []
    app = McpApp("stack", tools=[counted], auth=Keys(trail), middleware=[Probe(trail, holder)],
                 settings=Settings.from_env({}))
    layers = list(app.stack)
    assert all(isinstance(layer, Layer) for layer in layers)
    assert [type(layer) for layer in layers] == [HostOriginGuard, CorsPolicy, Authentication, BodyLimit,
                                                 SessionOrEnvelope, TenantState, EventBuffering, Probe]
    listed = app.layers
    assert [layer.name for layer in listed] == [*FRAMEWORK, "Probe"]
    assert [layer.kind for layer in listed] == ["framework"] * 7 + ["middleware"]
    assert listed[2].where == "tests.middleware.test_stack.Keys"  # the verifier in use
    assert listed[-1].where == "tests.middleware.test_stack.Probe"


def test_without_auth_the_auth_layer_is_listed_as_off_and_not_run() -> None:
    app = McpApp("stack", tools=[counted], settings=Settings.from_env({}))
    assert [layer.name for layer in app.layers] == FRAMEWORK
    assert app.layers[2].where == "off"
    assert app.stack.auth is None and Authentication not in {type(d) for d in app.stack.doors}


async def test_startup_and_shutdown_run_through_the_layers_in_order_and_in_reverse() -> None:
    trail: list[str] = []
    holder: list[McpApp] = []
    app = McpApp("stack", tools=[counted], auth=Keys(trail), middleware=[Probe(trail, holder)],
                 settings=Settings.from_env({}))
    holder.append(app)
    await app.startup()
    assert trail == ["auth start", "probe start (state open: True)"]
    await app.shutdown()
    assert trail[2:] == ["probe stop", "auth close"]


async def test_the_door_layers_answer_in_stack_order() -> None:
    app = McpApp("stack", tools=[counted], auth=Keys([]),
                 settings=Settings.from_env({}, max_body_bytes=1000, cors_allowed_origins=("https://app.example",)))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
        await app.startup()
        try:
            json = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
            too_big = b'{"jsonrpc":"2.0","id":1,"method":"ping","pad":"' + b"x" * 2000 + b'"}'
            # the guard before auth: a foreign origin is 403 whatever the token
            r = await http.post("/mcp", content=too_big, headers={**json, "origin": "https://evil.example"})
            assert r.status_code == 403
            # CORS before auth: a preflight needs no token
            r = await http.options("/mcp", headers={"origin": "https://app.example",
                                                    "access-control-request-method": "POST"})
            assert r.status_code == 204 and r.headers["access-control-allow-origin"] == "https://app.example"
            # auth before the body limit: no token is 401 before a byte of the body counts
            r = await http.post("/mcp", content=too_big, headers=json)
            assert r.status_code == 401
            # with a token, the body limit answers
            r = await http.post("/mcp", content=too_big, headers={**json, "authorization": "Bearer good"})
            assert r.status_code == 413
            # and an allowed origin's answer passed back out through CORS
            r = await http.post("/mcp", headers={**json, "authorization": "Bearer good", "mcp-method": "tools/list",
                                                 "mcp-protocol-version": "2026-07-28",
                                                 "origin": "https://app.example"},
                                json={"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                                      "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                                           "io.modelcontextprotocol/clientCapabilities": {}}}})
            assert r.status_code == 200, r.text
            assert r.headers["access-control-allow-origin"] == "https://app.example"
        finally:
            await app.shutdown()
