"""A small app that tells a caller who the server thinks it is (auth and tenancy tests)."""

from __future__ import annotations

from mcpcore import Context, McpApp, tool


@tool
async def whoami(ctx: Context) -> dict[str, str | None]:
    """The caller's subject and tenant as the server sees them; writes and reads ctx.state."""
    await ctx.state.set("last", ctx.auth.subject if ctx.auth else "anonymous")
    return {"subject": ctx.auth.subject if ctx.auth else None, "tenant": ctx.tenant_id,
            "state": await ctx.state.get("last")}


app = McpApp("whoami", "1.0.0", tools=[whoami])
