"""The A/B of mcpcore's resumability event buffer (``sse_buffer``): the SSE logging request on
mcpcore alone with each variant's environment, the two interleaved, run as the load family runs
its servers."""

from __future__ import annotations

from typing import Any

from ..harness.catalog import SERVERS
from ..harness.scenario import Ctx, Family, Scenario
from .load import run_variants
from .load import table as load_table


def run(ctx: Ctx, sc: Scenario, servers: list[str]) -> dict[str, Any]:
    """mcpcore once per variant (``sc.variants``: label -> environment added to mcpcore's)."""
    return run_variants(ctx, sc, [(name, SERVERS["mcpcore"], {**sc.env.get("mcpcore", {}), **extra})
                                  for name, extra in sc.variants.items()])


def notes(sc: Scenario, servers: dict[str, Any]) -> list[str]:
    """What the buffer costs, when both variants were measured."""
    on, off = servers.get("buffer on", {}), servers.get("buffer off", {})
    if on.get("status") != "ok" or off.get("status") != "ok":
        return []
    return ["", f"Buffer cost per SSE response: {(off['rps'] / on['rps'] - 1) * 100:+.1f}% "
                f"(req/s off/on - 1); p50 on/off {on['p50_ms'] / off['p50_ms']:.2f}x, "
                f"p99 on/off {on['p99_ms'] / off['p99_ms']:.2f}x."]


FAMILY = Family(kind="ab", run=run, table=load_table, notes=notes)
