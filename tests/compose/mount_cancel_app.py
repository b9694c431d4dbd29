"""A parent that mounts a child whose tool waits for its caller to cancel (served by a real
server in the mount cancellation tests): ``kid_wait_for_cancel`` and ``kid_cancellations``."""

from __future__ import annotations

import asyncio

from mcpcore import Context, McpApp

CANCELLED: list[str] = []
child = McpApp("kid", "1.0.0")


@child.tool
async def wait_for_cancel(ctx: Context) -> str:
    """Wait up to 10 s for the caller to cancel; the child's handler notes the cancellation it sees."""
    try:
        await asyncio.wait_for(ctx.signal.wait(), 10)
    except TimeoutError:
        return "not cancelled"
    CANCELLED.append(ctx.request_id)
    return "cancelled"


@child.tool
def cancellations() -> int:
    """How many calls of wait_for_cancel saw their cancellation."""
    return len(CANCELLED)


app = McpApp("parent", "1.0.0")
app.mount(child, namespace="kid")
