"""mcpcore echo server with three pass-through middleware layers and one dependency: what the
middleware and ``Depends`` cost per request (scenarios ``layers_2026`` and ``layers_2025``).

The wire is the same as ``mcpcore_echo``'s: the layers hand every call on unchanged, and the
dependency is resolved once per request before ``echo`` runs. It is an async function (as a
"current user" or "settings" dependency is); ``BENCH_DEPENDS=generator`` makes it an async
generator with code after its ``yield`` (as a database session is), which costs more: asyncio
registers every async generator it starts, and ending one raises ``StopAsyncIteration``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Annotated, Any

from mcpcore_echo import doc, echo_logged  # the same definitions as the plain server's

from mcpcore import Call, CallNext, Depends, McpApp, Middleware, tool


class PassRequest(Middleware):
    """Every request, handed on."""

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        return await call_next(call)


class PassToolCall(Middleware):
    """Every tool call, handed on."""

    async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
        return await call_next(call)


class Handle:
    """What the dependency yields: a stand-in for a database session."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open = True


async def handle_session() -> AsyncIterator[Handle]:
    h = Handle()
    try:
        yield h
    finally:
        h.open = False


async def handle_value() -> Handle:
    return Handle()


handle = handle_session if os.environ.get("BENCH_DEPENDS") == "generator" else handle_value


@tool
async def echo(text: str, h: Annotated[Handle, Depends(handle)]) -> str:
    """Return the text unchanged."""
    return text


app = McpApp("bench", "1.0", tools=[echo, echo_logged], resources=[doc],
             middleware=[PassRequest(), PassToolCall(), PassRequest()])
