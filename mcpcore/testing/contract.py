"""``run_tool_contract``: call one tool through the production path, without a server;
``tool_error``: the error envelope of a failed call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import Settings
from ..context import AuthInfo, ContextServices, Inbound, NullOutbound
from ..definitions.tools import TOOL_ATTR, ToolDefinition
from ..errors import TOOL_ERROR_META, McpError
from ..protocol.versions import LATEST_LEGACY, MODERN_VERSIONS, Era
from ..server.core import ServerCore
from ..server.notify import Notifier
from ..server.registry import Registry
from ..server.tools import call_tool

__all__ = ["run_tool_contract", "tool_error"]


async def run_tool_contract(
    definition: Any,
    arguments: Mapping[str, Any] | None = None,
    *,
    auth: AuthInfo | None = None,
    tenant_id: str | None = "default",
    client_capabilities: dict[str, Any] | None = None,
    input_responses: dict[str, Any] | None = None,
    request_state: str | None = None,
    modern: bool = False,
    services: ContextServices | None = None,
) -> dict[str, Any]:
    """The ``CallToolResult`` (or ``input_required`` result) a client would receive.

    Arguments are validated, the declared error contract fills recovery hints, enrichment and
    collected content are merged, exactly as in production. Protocol-level refusals (``-32021``,
    an invalid request state) come back as ``{"error": {...}}``; read a tool error's envelope
    with :func:`tool_error`.
    """
    tool: ToolDefinition = getattr(definition, TOOL_ATTR, definition)
    if not isinstance(tool, ToolDefinition):
        raise TypeError("run_tool_contract needs a @tool function or a ToolDefinition")
    from ..bus.memory import LocalBus
    from ..testing.mock import create_mock_context

    registry = Registry()
    registry.add(tool)
    svc = services or create_mock_context()._req.services
    settings = Settings.from_env({}, auth_mode="jwt" if auth is not None else "none")
    core = ServerCore(registry=registry, settings=settings, notifier=Notifier(LocalBus()),
                      server_info={"name": "contract", "version": "0"})
    req = Inbound(method="tools/call", jsonrpc_id="contract", era=Era.MODERN if modern else Era.LEGACY,
                         protocol_version=MODERN_VERSIONS[0] if modern else LATEST_LEGACY, services=svc,
                         outbound=NullOutbound(), auth=auth, tenant_id=tenant_id,
                         client_capabilities=client_capabilities if client_capabilities is not None else {},
                         input_responses=input_responses, request_state=request_state, transport="test")
    params: dict[str, Any] = {"name": tool.name}
    if arguments is not None:
        params["arguments"] = dict(arguments)
    try:
        return await call_tool(core, params, req)
    except McpError as exc:
        return {"error": exc.to_wire(req.request_id, tool.errors)}


def tool_error(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The error envelope (``{"code", "message", "data"}``) of an ``isError`` ``CallToolResult``,
    or ``None`` for a successful one.

    It is read from ``_meta["dev.mcpcore/error"]``; a protocol-level refusal as
    :func:`run_tool_contract` returns it (``{"error": {...}}``) is read too.

    Raises:
        AssertionError: ``result`` is an ``isError`` result without an envelope.
    """
    if "error" in result and "content" not in result:
        return dict(result["error"])
    if not result.get("isError"):
        return None
    envelope = (result.get("_meta") or {}).get(TOOL_ERROR_META)
    if not isinstance(envelope, dict):
        raise AssertionError(f"an isError result without _meta[{TOOL_ERROR_META!r}]: {dict(result)!r}")
    return envelope
