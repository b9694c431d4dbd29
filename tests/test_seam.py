"""Extensions plug into an app through one seam (``mcpcore/extensions/seam.py``): a method, a
declaration, definitions, background work started and stopped with the app; the extension
sees the seam, never the app."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mcpcore import McpApp, Middleware, Settings, tool
from mcpcore.context import Inbound
from mcpcore.extensions import Seam
from mcpcore.server.core import ServerCore
from mcpcore.testing import McpTestClient

from .connect import Connect

pytestmark = pytest.mark.anyio


@tool
async def plain() -> str:
    """A tool the extension brings."""
    return "from the extension"


class Echo:
    """A toy extension: ``acme/echo`` on both eras, its declaration, a tool, a lifetime."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.seen: Any = None

    def plug_into(self, seam: Seam) -> None:
        self.seen = seam
        seam.add(plain)

        async def echo(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
            return {"echo": params.get("text"), "pageSize": core.settings.list_page_size}

        seam.add_method("acme/echo", echo)
        seam.declare("com.acme/echo", {"version": 1})

        async def start() -> None:
            self.events.append("start")

        async def close() -> None:
            self.events.append("close")

        seam.on_start(start, close)


async def test_an_extension_serves_through_the_seam(connect: Connect) -> None:
    app = McpApp("x", settings=Settings.from_env({}, list_page_size=7))
    echo = app.plug(Echo())
    assert isinstance(echo.seen, Seam) and not isinstance(echo.seen, McpApp)
    async with connect(app) as c:
        assert echo.events == ["start"]
        r = await c.request("acme/echo", {"text": "hi"})
        assert (r["echo"], r["pageSize"]) == ("hi", 7)
        caps = c.server_capabilities
        assert caps["extensions"]["com.acme/echo"] == {"version": 1}
        assert [t["name"] for t in await c.list_tools()] == ["plain"]
    assert echo.events == ["start", "close"]


async def test_plugging_in_after_startup_is_refused() -> None:
    app = McpApp("x", settings=Settings.from_env({}))
    async with McpTestClient(app):
        with pytest.raises(RuntimeError, match="before the app starts"):
            app.plug(Echo())


async def test_an_extension_reads_the_apps_readiness_from_the_seam() -> None:
    app = McpApp("x", settings=Settings.from_env({}))
    echo = app.plug(Echo())
    ready, checks = await echo.seen.readiness()
    assert not ready and checks["app"] == "not started"
    async with McpTestClient(app):
        ready, checks = await echo.seen.readiness()
        assert ready and "app" not in checks and set(checks.values()) <= {"ok"}


def test_the_side_routes_plug_in_and_hold_only_what_they_use() -> None:
    app = McpApp("x", settings=Settings.from_env({}))
    side = app._side
    assert side.readiness is app.seam.readiness and side.core is app.seam.core
    for held in vars(side).values():
        assert held is not app and getattr(held, "__self__", None) is not app


async def test_the_transports_share_the_apps_one_runtime_and_stdio_a_copy_of_it() -> None:
    app = McpApp("x", settings=Settings.from_env({}, http_sse=True))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as h:
        await h.get("/mcp")
        await h.post("/messages")
    try:
        assert app._http is not None and app._http_sse is not None
        assert app._http.rt is app._runtime and app._http_sse.rt is app._runtime
        stdio = app._runtime.stdio()
        assert (stdio.dispatcher, stdio.sessions, stdio.live) == (app.dispatcher, app.sessions, app.live)
        assert (stdio.session_mode, stdio.auth, stdio.shared, stdio.stream_slots) == ("stateful", None, False, None)
    finally:
        await app.shutdown()


async def test_started_is_one_fact_read_by_the_app_the_seam_and_readiness() -> None:
    app = McpApp("x", settings=Settings.from_env({}))
    assert not hasattr(app, "_started")  # one holder: the readiness check
    assert (app.started, app.seam.started, app.readiness.started) == (False, False, False)
    async with McpTestClient(app):
        assert (app.started, app.seam.started, app.readiness.started) == (True, True, True)
        with pytest.raises(RuntimeError, match="before the app starts"):
            app.seam.add_middleware(Middleware())
    assert (app.started, app.seam.started, app.readiness.started) == (False, False, False)


async def test_an_extension_adds_middleware_and_a_readiness_part_through_the_seam() -> None:
    seen: list[str] = []

    class Tagging(Middleware):
        async def on_call_tool(self, call: Any, call_next: Any) -> Any:
            seen.append(call.params["name"])
            return await call_next(call)

    class Watch:
        def plug_into(self, seam: Seam) -> None:
            seam.add_middleware(Tagging())
            seam.add_probe(lambda: ({"watch": "down"}, False))

    app = McpApp("x", tools=[plain], settings=Settings.from_env({}))
    app.plug(Watch())
    assert [type(m).__name__ for m in app.middleware] == ["Tagging"] and app.seam.middleware is app.middleware
    async with McpTestClient(app) as c:
        await c.call_tool("plain", {})
        ready, checks = await app.readiness()
    assert seen == ["plain"] and ready and checks["watch"] == "down"
