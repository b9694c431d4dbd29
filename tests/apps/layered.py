"""An app with middleware layers and dependencies whose effects a client can read back (the
official-client tests run it under uvicorn and over stdio).

``counts`` answers what happened in this process so far: calls each layer saw, dependencies
opened and closed, and the errors their cleanup saw.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Annotated, Any

from mcpcore import Call, CallNext, Context, Depends, JsonRpcErrorCode, McpApp, McpError, Middleware, tool

COUNTS: Counter[str] = Counter()


class Caller:
    """Who a layer decided is calling."""

    def __init__(self, name: str) -> None:
        self.name = name


class Audit(Middleware):
    """Counts every request and names the caller for the code after it."""

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        COUNTS[f"audit:{call.method}"] += 1
        call.ctx.values[Caller] = Caller("client")
        return await call_next(call)


class Guard(Middleware):
    """Refuses the tool named ``forbidden`` before it runs; tags every result."""

    async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
        if call.name == "forbidden":
            raise McpError(JsonRpcErrorCode.Forbidden, "Refused by a layer.", {"reason": "guarded"})
        result = await call_next(call)
        result.setdefault("_meta", {})["example/guarded"] = True
        return result


class Session:
    def __init__(self, caller: str) -> None:
        self.caller = caller


async def session(ctx: Context) -> AsyncIterator[Session]:
    COUNTS["session.open"] += 1
    try:
        yield Session(ctx.values[Caller].name)
    except Exception as exc:
        COUNTS[f"session.saw.{type(exc).__name__}"] += 1
        raise
    finally:
        COUNTS["session.close"] += 1


@tool
async def greet(name: str, s: Annotated[Session, Depends(session)]) -> str:
    """Greet someone, through the session."""
    return f"hello {name} (for {s.caller})"


@tool
async def explode(s: Annotated[Session, Depends(session)]) -> str:
    """Fail after opening the session."""
    raise RuntimeError("kaboom")


@tool
async def forbidden() -> str:
    """Never reached: a layer refuses it."""
    return "unreachable"


@tool
async def counts() -> dict[str, int]:
    """What this process counted so far."""
    return dict(COUNTS)


app = McpApp("layered", "1.0.0", tools=[greet, explode, forbidden, counts], middleware=[Audit(), Guard()])
