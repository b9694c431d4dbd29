"""Task tools that must not run twice, for the fault tests: each run appends a line to a file in
``MCP_EXAMPLE_SANDBOX`` (outside Redis, so a run is counted even while the store is away)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

from pydantic import Field

from mcpcore import McpApp, TaskSupport, tool

_SANDBOX = Path(os.environ.get("MCP_EXAMPLE_SANDBOX", "."))


def _record(key: str) -> int:
    with (_SANDBOX / key).open("a") as f:
        f.write("run\n")
    return len((_SANDBOX / key).read_text().splitlines())


@tool(task="optional")
async def charge(key: Annotated[str, Field(description="Name of this charge")],
                 seconds: Annotated[float, Field(description="How long the charge takes")]) -> str:
    """Charge the card: not safe to run again."""
    runs = _record(key)
    await asyncio.sleep(seconds)
    return f"charged {key} (run {runs})"


@tool(task=TaskSupport("optional", rerun=True))
async def charge_safely(key: Annotated[str, Field(description="Name of this charge")],
                        seconds: Annotated[float, Field(description="How long the charge takes")]) -> str:
    """An idempotent charge: safe to run again, but a finished one must not be."""
    runs = _record(key)
    await asyncio.sleep(seconds)
    return f"charged {key} (run {runs})"


app = McpApp("charges", "1.0.0", tools=[charge, charge_safely])
