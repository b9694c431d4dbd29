"""``completion/complete``: argument suggestions from a prompt's or resource template's completers."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..context import Inbound
from ..errors import JsonRpcErrorCode, McpError, quoted
from .results import classify_and_log
from .visibility import may_see

if TYPE_CHECKING:
    from .core import ServerCore

__all__ = ["complete"]

_MAX_VALUES = 100


def _completer(core: ServerCore, ref: dict[str, Any], argument: str, req: Inbound) -> Callable[..., Any] | None:
    kind = ref.get("type")
    if kind == "ref/prompt":
        p = core.registry.prompts.get(ref.get("name"))  # type: ignore[arg-type]
        if p is None or not may_see(core, p, req):
            raise McpError(JsonRpcErrorCode.InvalidParams, f"Unknown prompt: {quoted(ref.get('name'))}")
        return p.complete.get(argument)
    if kind == "ref/resource":
        uri = ref.get("uri")
        target = None
        for t in core.registry.templates:
            if t.uri == uri:
                target = t
        if target is None and isinstance(uri, str):
            found = core.registry.find_resource(uri)
            target = found[0] if found else None
        if target is None or not may_see(core, target, req):
            raise McpError(JsonRpcErrorCode.InvalidParams, f"Unknown resource: {quoted(uri)}")
        return target.complete.get(argument)
    raise McpError(JsonRpcErrorCode.InvalidParams, 'ref.type must be "ref/prompt" or "ref/resource".')


async def complete(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    """``completion/complete``: at most 100 values for ``params.argument``."""
    ref = params.get("ref")
    argument = params.get("argument")
    if type(ref) is not dict or type(argument) is not dict or type(argument.get("name")) is not str:
        raise McpError(JsonRpcErrorCode.InvalidParams, 'completion/complete needs "ref" and "argument.name".')
    value = argument.get("value", "")
    if type(value) is not str:
        raise McpError(JsonRpcErrorCode.InvalidParams, '"argument.value" must be a string.')
    context = params.get("context") or {}
    context_args = context.get("arguments") if type(context) is dict else None
    context_args = context_args if type(context_args) is dict else {}
    completer = _completer(core, ref, argument["name"], req)
    values: list[str] = []
    if completer is not None:
        try:
            got = completer(value, context_args)
            if inspect.isawaitable(got):
                got = await got
            values = [str(v) for v in (got or [])]
        except Exception as exc:
            err = classify_and_log(exc, "completion", req.request_id)
            if err is exc:
                raise
            raise err from exc
    return {"completion": {"values": values[:_MAX_VALUES], "total": len(values), "hasMore": len(values) > _MAX_VALUES}}
