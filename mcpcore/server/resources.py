"""``resources/*``: list, templates, read, subscribe."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..context import Context, Inbound
from ..context.inputs import InputRequired
from ..definitions.resources import resource_entries
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.versions import Era
from .results import classify_and_log
from .rounds import run_rounds

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

__all__ = ["all_resources", "not_found", "read_resource", "subscribe", "unsubscribe"]


def _uri(params: dict[str, Any]) -> str:
    uri = params.get("uri")
    if type(uri) is not str or not uri:
        raise McpError(JsonRpcErrorCode.InvalidParams, 'This method needs a string "uri".')
    return uri


def not_found(uri: str, era: Era) -> McpError:
    code = JsonRpcErrorCode.InvalidParams if era is Era.MODERN else JsonRpcErrorCode.ResourceNotFound
    return McpError(code, f"Resource not found: {uri}", {"uri": uri})


async def all_resources(d: Dispatcher, req: Inbound) -> list[dict[str, Any]]:
    items = [r.listing() for r in d.registry.resources.values() if r.listed]
    for t in d.registry.templates:
        if t.list_call is not None:
            kwargs: dict[str, Any] = {}
            if t.list_ctx_param:
                kwargs[t.list_ctx_param] = Context(req, operation=f"resource_list:{t.uri}")
            for entry in resource_entries(await t.list_call(kwargs)):
                entry.setdefault("mimeType", t.mime_type) if t.mime_type else None
                entry.setdefault("icons", t.icons) if t.icons else None
                items.append(entry)
    return items


async def read_resource(d: Dispatcher, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    uri = _uri(params)
    found = d.registry.find_resource(uri)
    if found is None:
        raise not_found(uri, req.era)
    res, variables = found
    d.check_scopes(res.auth, req)
    try:
        validated = res.args.validate(variables)
    except ValidationError as exc:
        raise McpError(JsonRpcErrorCode.InvalidParams, f"Invalid URI for {res.uri}: "
                       f"{exc.errors()[0]['msg']}", {"uri": uri}) from exc
    where = f"resource:{res.name}"

    async def attempt() -> dict[str, Any]:
        kwargs = res.args.kwargs(validated)
        if res.args.ctx_param is not None:
            kwargs[res.args.ctx_param] = Context(req, operation=uri, errors=res.errors, uri=uri)
        try:
            value = await res.call(kwargs)
        except InputRequired:
            raise
        except Exception as exc:
            err = classify_and_log(exc, where, req.request_id)
            raise d.wire_error(err, res.errors) from exc
        if value is None:
            raise not_found(uri, req.era)
        out: dict[str, Any] = {"contents": res.contents(uri, value)}
        if req.era is Era.MODERN and res.cache_hint is not None:
            out["ttlMs"] = res.cache_hint.ttl_ms
            out["cacheScope"] = res.cache_hint.scope
        return out

    if d.telemetry is None:
        return await run_rounds(d, req, uri, attempt)
    with d.telemetry.execution(f"resource_read:{res.name}", req, {"mcp.resource.uri": uri}):
        return await run_rounds(d, req, uri, attempt)


async def subscribe(d: Dispatcher, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    uri = _uri(params)
    session = req.session
    if session is not None and uri not in session.subscriptions:
        cap = d.settings.max_subscriptions
        if len(session.subscriptions) >= cap:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"A session holds at most {cap} resource subscriptions; "
                           "unsubscribe from one first.", {"reason": "too_many_subscriptions", "limit": cap})
        session.subscriptions.add(uri)
        await d.save_session(session)
    return {}


async def unsubscribe(d: Dispatcher, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    uri = _uri(params)
    session = req.session
    if session is not None and uri in session.subscriptions:
        session.subscriptions.discard(uri)
        await d.save_session(session)
    return {}
