"""Method handlers see the server core (what a method may touch), not the dispatcher."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore import McpError
from mcpcore.context import Inbound
from mcpcore.server.core import ServerCore
from mcpcore.server.dispatcher import Dispatcher
from mcpcore.testing import McpTestClient

from .conftest import example_app
from .connect import Connect

pytestmark = pytest.mark.anyio


async def test_an_added_method_receives_the_core_in_each_way_in(connect: Connect) -> None:
    seen: list[Any] = []

    async def whoami(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        seen.append(core)
        return {"tools": len(core.registry.tools), "gated": "tools" in core.capabilities(), "era": req.era.value}

    app = example_app()
    app.dispatcher.add_method("x/whoami", whoami, gate="tools")
    async with connect(app) as c:
        r = await c.request("x/whoami")
    assert r["tools"] == len(app.registry.tools) and r["gated"] is True
    [core] = seen
    assert type(core) is ServerCore and not isinstance(core, Dispatcher) and core is app.dispatcher.core
    assert core.registry is app.registry and core.closing is app.dispatcher.closing


async def test_a_method_gated_on_an_absent_capability_is_not_found() -> None:
    async def never(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        raise AssertionError("not served")

    app = example_app()
    app.dispatcher.add_method("x/prompted", never, gate="nonexistent")
    async with McpTestClient(app) as c:
        with pytest.raises(McpError) as e:
            await c.request("x/prompted")
    assert e.value.code == -32601


def test_telemetry_set_on_the_dispatcher_reaches_the_core() -> None:
    app = example_app()
    marker: Any = object()
    app.dispatcher.telemetry = marker
    assert app.dispatcher.core.telemetry is marker and app.dispatcher.telemetry is marker
