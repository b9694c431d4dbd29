"""A backend for the proxy tests: the example server, counting the ``initialize`` requests it
answers (what the proxy's session reuse is measured by), with ``backend_initializes`` to read it:
those made for callers, and those of the proxies' own sessions (lists, notification streams),
which they mark with a ``clientInfo.title``."""

from __future__ import annotations

from typing import Any

from examples.everything import app
from mcpcore import Call, CallNext, Middleware

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


app.add_middleware(CountInitialize())
