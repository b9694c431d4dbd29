"""A backend whose lists depend on who asks, for the proxy's per-caller lists: JWT auth (the
settings from the environment), a tool only ``alice`` sees, ``tools/list`` cached for 1 s (or
``PRIVATE_TTL_MS``) and ``private``, and ``list_fetches`` counting the lists each subject was given."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from mcpcore import CacheHint, Call, CallNext, Context, McpApp, Middleware, tool

FETCHES: Counter[str] = Counter()


class CountLists(Middleware):
    """Counts each ``tools/list`` by the caller's subject."""

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        if call.method == "tools/list":
            auth = call._req.auth if call._req is not None else None
            FETCHES[auth.subject if auth is not None and auth.subject else "anonymous"] += 1
        return await call_next(call)


@tool
def common() -> str:
    """Every caller sees this one."""
    return "common"


@tool(visible_to=lambda ctx: ctx.auth is not None and ctx.auth.subject == "alice")
def alice_only(ctx: Context) -> str:
    """Only alice sees (and may call) this one."""
    return f"for {ctx.auth.subject if ctx.auth else None}"


@tool
def list_fetches() -> dict[str, int]:
    """How many tools/list each subject was answered."""
    return dict(FETCHES)


app = McpApp("private-lists", "1.0", tools=[common, alice_only, list_fetches],
             cache_hints={"tools/list": CacheHint(int(os.environ.get("PRIVATE_TTL_MS", "1000")), "private")},
             middleware=[CountLists()])
