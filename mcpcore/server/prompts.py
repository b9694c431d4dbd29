"""``prompts/get``: the prompt family of the invoke pipeline (failures are JSON-RPC errors)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..context import Context, Inbound
from ..definitions.prompts import PromptDefinition
from ..errors import JsonRpcErrorCode, McpError, quoted
from .invoke import Family, invoke, span
from .visibility import may_see

if TYPE_CHECKING:
    from ..telemetry import Telemetry
    from .core import ServerCore

__all__ = ["PROMPTS", "get_prompt"]


class PromptFamily(Family[PromptDefinition]):
    """Prompts in the invoke pipeline."""

    noun = "prompt"
    hint = "Check the prompt's arguments in prompts/list and get it again with corrected values."

    def operation(self, d: PromptDefinition, target: str) -> str:
        return "prompt:" + target

    def shape(self, d: PromptDefinition, value: Any, ctx: Context | None, req: Inbound, target: str) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": d.messages(value)}
        if d.description:
            out["description"] = d.description
        return out

    def observe(self, tel: Telemetry, d: PromptDefinition, req: Inbound,
                target: str) -> AbstractContextManager[Callable[[bool], None]]:
        return span(tel, f"prompt_generation:{target}", req, {"mcp.prompt.name": target})


PROMPTS = PromptFamily()


def get_prompt(core: ServerCore, params: dict[str, Any], req: Inbound) -> Awaitable[dict[str, Any]]:
    """``prompts/get``: the named prompt's messages for ``params.arguments``."""
    name = params.get("name")
    if type(name) is not str:
        raise McpError(JsonRpcErrorCode.InvalidParams, 'prompts/get needs a string "name".')
    p = core.registry.prompts.get(name)
    if p is None or (p.visible_to is not None and not may_see(core, p, req)):
        raise McpError(JsonRpcErrorCode.InvalidParams, f"Unknown prompt: {quoted(name)}", {"reason": "unknown_prompt"})
    if p.forward is not None:
        return p.forward(params, req)
    pipe = p.pipeline
    return invoke(core, pipe if pipe is not None else PROMPTS.pipeline(p), params.get("arguments"), req, name)
