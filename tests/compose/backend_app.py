"""A backend for the proxy tests: the example server, counting the ``initialize`` requests it
answers (what the proxy's session reuse is measured by), with ``backend_initializes`` to read it:
those made for callers, and those of the proxies' own sessions (lists, notification streams),
which they mark with a ``clientInfo.title``."""

from __future__ import annotations

import asyncio
from typing import Any

from examples.everything import app
from mcpcore import Call, CallNext, Context, Middleware

INITIALIZES: list[str] = []  # "caller" or "own", one per initialize answered


class CountInitialize(Middleware):
    """Counts every ``initialize`` this process answers."""

    async def on_initialize(self, call: Call, call_next: CallNext) -> Any:
        own = (call.params.get("clientInfo") or {}).get("title") == "the proxy's own requests"
        INITIALIZES.append("own" if own else "caller")
        return await call_next(call)


@app.tool
def backend_initializes() -> dict[str, int]:
    """How many 2025 sessions this process has opened: for callers, and the proxies' own."""
    return {"caller": INITIALIZES.count("caller"), "own": INITIALIZES.count("own")}


CANCELLED: list[str] = []


@app.tool
async def wait_for_cancel(ctx: Context) -> str:
    """Wait up to 10 s for the caller to cancel; a cancellation is noted (``backend_cancellations``)."""
    try:
        await asyncio.wait_for(ctx.signal.wait(), 10)
    except TimeoutError:
        return "not cancelled"
    CANCELLED.append(ctx.request_id)
    return "cancelled"


@app.tool
def backend_cancellations() -> int:
    """How many calls of wait_for_cancel saw their cancellation."""
    return len(CANCELLED)


app.add_middleware(CountInitialize())
