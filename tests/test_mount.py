"""Mounting under Starlette and FastAPI, with the host running the lifespan (or not)."""

from __future__ import annotations

import logging

import pytest
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount

from mcpcore.testing import McpTestClient

from .conftest import example_app

pytestmark = pytest.mark.anyio


async def test_starlette_mount_with_lifespan() -> None:
    mcp = example_app()
    host = Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=mcp.lifespan)
    async with host.router.lifespan_context(host):
        assert mcp.started
        async with McpTestClient(host, url="http://127.0.0.1:8000/mcp/") as c:
            assert c.session_id
            assert any(t["name"] == "search" for t in await c.list_tools())
        async with McpTestClient(host, url="http://127.0.0.1:8000/mcp/", era="modern") as c:
            assert (await c.call_tool("test_simple_text"))["content"]


async def test_starlette_route_serves_the_exact_path() -> None:
    from starlette.routing import Route

    mcp = example_app()
    host = Starlette(routes=[Route("/mcp", endpoint=mcp, methods=["GET", "POST", "DELETE"])], lifespan=mcp.lifespan)
    async with host.router.lifespan_context(host), McpTestClient(host, url="http://127.0.0.1:8000/mcp") as c:
        assert (await c.call_tool("test_simple_text"))["content"]
    assert not mcp.started


async def test_fastapi_mount_and_other_routes_untouched() -> None:
    mcp = example_app()
    api = FastAPI(lifespan=mcp.lifespan)

    @api.get("/hello")
    def hello() -> dict[str, str]:
        return {"hi": "there"}

    api.mount("/mcp", mcp)
    async with api.router.lifespan_context(api), McpTestClient(api, url="http://127.0.0.1:8000/mcp/") as c:
        r = await c.call_tool("search", {"query": "gadget"})
        assert r["structuredContent"]["totalCount"] == 2
        assert (await c.http.get("http://127.0.0.1:8000/hello")).json() == {"hi": "there"}


async def test_mount_without_lifespan_starts_lazily_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    mcp = example_app()
    host = Starlette(routes=[Mount("/tools", app=mcp)])
    with caplog.at_level(logging.WARNING, logger="mcpcore.app"):
        async with McpTestClient(host, url="http://127.0.0.1:8000/tools/") as c:
            assert (await c.call_tool("test_simple_text"))["content"]
    assert any("lifespan" in r.message for r in caplog.records)
    await mcp.shutdown()


async def test_standalone_asgi_lifespan_protocol() -> None:
    mcp = example_app(session_mode="stateless")
    sent: list[dict[str, str]] = []
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> dict[str, str]:
        return next(messages)

    async def send(m: dict[str, str]) -> None:
        sent.append(m)

    await mcp({"type": "lifespan"}, receive, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def test_startup_refuses_a_mode_that_breaks_the_requirement() -> None:
    from mcpcore import ConfigurationError, McpApp, SessionMode, Settings

    app = McpApp(settings=Settings.from_env({"MCP_SESSION_MODE": "stateless"}),
                 session_mode=SessionMode(default="stateful", require="stateful"))
    with pytest.raises(ConfigurationError, match="requires 'stateful'"):
        await app.startup()
    ok = McpApp(settings=Settings.from_env({}), session_mode=SessionMode(default="stateful", require="stateful"))
    assert ok.session_mode == "stateful"
