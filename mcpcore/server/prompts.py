"""``prompts/get`` and ``completion/complete``."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..context import Context, Inbound
from ..context.inputs import InputRequired
from ..errors import JsonRpcErrorCode, McpError
from .results import classify_and_log
from .rounds import run_rounds

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

__all__ = ["complete", "get_prompt"]


async def get_prompt(d: Dispatcher, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    name = params.get("name")
    if type(name) is not str:
        raise McpError(JsonRpcErrorCode.InvalidParams, 'prompts/get needs a string "name".')
    p = d.registry.prompts.get(name)
    if p is None:
        raise McpError(JsonRpcErrorCode.InvalidParams, f"Unknown prompt: {name}", {"reason": "unknown_prompt"})
    args = params.get("arguments") or {}
    if type(args) is not dict:
        raise McpError(JsonRpcErrorCode.InvalidParams, '"arguments" must be an object of strings.')
    args = {k: v for k, v in args.items() if not k.startswith("_")}
    unknown = sorted(set(args) - p.args.field_keys)
    if unknown:
        raise McpError(JsonRpcErrorCode.InvalidParams, f"Unknown argument(s) for prompt {name}: {', '.join(unknown)}.")
    try:
        validated = p.args.validate(args)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e["loc"])
        raise McpError(JsonRpcErrorCode.InvalidParams, f"Invalid arguments for prompt {name}: {where}: {e['msg']}",
                       {"reason": "invalid_arguments"}) from exc
    operation = f"prompt:{name}"

    async def attempt() -> dict[str, Any]:
        kwargs = p.args.kwargs(validated)
        if p.args.ctx_param is not None:
            kwargs[p.args.ctx_param] = Context(req, operation=operation)
        try:
            value = await p.call(kwargs)
            messages = p.messages(value)
        except InputRequired:
            raise
        except Exception as exc:
            err = classify_and_log(exc, operation, req.request_id)
            raise d.wire_error(err, ()) from exc
        out: dict[str, Any] = {"messages": messages}
        if p.description:
            out["description"] = p.description
        return out

    if d.telemetry is None:
        return await run_rounds(d, req, operation, attempt)
    with d.telemetry.execution(f"prompt_generation:{name}", req, {"mcp.prompt.name": name}):
        return await run_rounds(d, req, operation, attempt)


async def complete(d: Dispatcher, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
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
    kind = ref.get("type")
    completer = None
    if kind == "ref/prompt":
        p = d.registry.prompts.get(ref.get("name"))  # type: ignore[arg-type]
        if p is None:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"Unknown prompt: {ref.get('name')}")
        completer = p.complete.get(argument["name"])
    elif kind == "ref/resource":
        uri = ref.get("uri")
        target = None
        for t in d.registry.templates:
            if t.uri == uri:
                target = t
        if target is None and isinstance(uri, str):
            found = d.registry.find_resource(uri)
            target = found[0] if found else None
        if target is None:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"Unknown resource: {uri}")
        completer = target.complete.get(argument["name"])
    else:
        raise McpError(JsonRpcErrorCode.InvalidParams, 'ref.type must be "ref/prompt" or "ref/resource".')
    values: list[str] = []
    if completer is not None:
        try:
            got = completer(value, context_args)
            if inspect.isawaitable(got):
                got = await got
            values = [str(v) for v in (got or [])]
        except Exception as exc:
            err = classify_and_log(exc, "completion", req.request_id)
            raise d.wire_error(err, ()) from exc
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}


