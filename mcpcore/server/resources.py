"""``resources/*``: list, read (the resource family of the invoke pipeline), subscribe.
A resource's failures are JSON-RPC errors with its declared recovery hints."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..context import Context, Inbound
from ..definitions.resources import ResourceDefinition, resource_entries
from ..errors import JsonRpcErrorCode, McpError, resource_not_found, with_recovery
from ..protocol.versions import Era
from .invoke import Family, invoke, span
from .visibility import may_see

if TYPE_CHECKING:
    from ..telemetry import Telemetry
    from .core import ServerCore

__all__ = ["RESOURCES", "all_resources", "read_resource", "subscribe", "unsubscribe"]


def _uri(params: dict[str, Any]) -> str:
    uri = params.get("uri")
    if type(uri) is not str or not uri:
        raise McpError(JsonRpcErrorCode.InvalidParams, 'This method needs a string "uri".')
    return uri


class ResourceFamily(Family[ResourceDefinition]):
    """Resources in the invoke pipeline; the target is the URI read, the arguments its template's
    variables."""

    noun = "resource template"
    hint = "Check the URI against the resource templates in resources/templates/list and read it again."

    def operation(self, d: ResourceDefinition, target: str) -> str:
        return target

    def label(self, d: ResourceDefinition, target: str) -> str:
        return "resource:" + d.name

    def context(self, d: ResourceDefinition, req: Inbound, operation: str, target: str) -> Context:
        return Context(req, operation=operation, errors=d.errors, uri=target)

    def shape(self, d: ResourceDefinition, value: Any, ctx: Context | None, req: Inbound,
              target: str) -> dict[str, Any]:
        if value is None:
            raise resource_not_found(target, modern=req.era is Era.MODERN)
        out: dict[str, Any] = {"contents": d.contents(target, value)}
        if req.era is Era.MODERN and d.cache_hint is not None:
            out["ttlMs"] = d.cache_hint.ttl_ms
            out["cacheScope"] = d.cache_hint.scope
        return out

    def failed(self, d: ResourceDefinition, err: McpError, req: Inbound) -> dict[str, Any]:
        raise with_recovery(err, d.errors)

    def observe(self, tel: Telemetry, d: ResourceDefinition, req: Inbound,
                target: str) -> AbstractContextManager[Callable[[bool], None]]:
        return span(tel, f"resource_read:{d.name}", req, {"mcp.resource.uri": target})


RESOURCES = ResourceFamily()


async def all_resources(core: ServerCore, req: Inbound) -> list[dict[str, Any]]:
    """Every listed resource: the fixed ones and what the templates' list callbacks return."""
    items = [r.listing() for r in core.registry.resources.values()
             if r.listed and (r.visible_to is None or may_see(core, r, req))]
    for t in core.registry.templates:
        if t.list_call is not None and (t.visible_to is None or may_see(core, t, req)):
            kwargs: dict[str, Any] = {}
            if t.list_ctx_param:
                kwargs[t.list_ctx_param] = Context(req, operation=f"resource_list:{t.uri}")
            for entry in resource_entries(await t.list_call(kwargs)):
                entry.setdefault("mimeType", t.mime_type) if t.mime_type else None
                entry.setdefault("icons", t.icons) if t.icons else None
                items.append(entry)
    return items


def read_resource(core: ServerCore, params: dict[str, Any], req: Inbound) -> Awaitable[dict[str, Any]]:
    """``resources/read``: the contents at ``params.uri``."""
    uri = _uri(params)
    found = core.registry.find_resource(uri)
    if found is None or (found[0].visible_to is not None and not may_see(core, found[0], req)):
        raise resource_not_found(uri, modern=req.era is Era.MODERN)
    res, variables = found
    if res.forward is not None:
        return res.forward(params, req)
    pipe = res.pipeline
    return invoke(core, pipe if pipe is not None else RESOURCES.pipeline(res), variables, req, uri)


async def subscribe(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    """``resources/subscribe`` (2025 era): remember the URI on the session."""
    uri = _uri(params)
    session = req.session
    if session is not None and uri not in session.subscriptions:
        cap = core.settings.max_subscriptions
        if len(session.subscriptions) >= cap:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"A session holds at most {cap} resource subscriptions; "
                           "unsubscribe from one first.", {"reason": "too_many_subscriptions", "limit": cap})
        session.subscriptions.add(uri)
        await core.save_session(session)
    return {}


async def unsubscribe(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    """``resources/unsubscribe`` (2025 era): forget the URI."""
    uri = _uri(params)
    session = req.session
    if session is not None and uri in session.subscriptions:
        session.subscriptions.discard(uri)
        await core.save_session(session)
    return {}
