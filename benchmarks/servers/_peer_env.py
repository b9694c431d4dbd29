"""Per-scenario switches shared by the peer servers (set by the harness)."""

from __future__ import annotations

import os


def flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in ("1", "true", "yes", "on")


# The SDK's documented production recommendation is stateless_http=True + json_response=True.
# Scenarios that need a session (2025 stateful) or an SSE response (logging) turn them off.
STATELESS = flag("BENCH_STATELESS", True)
JSON_RESPONSE = flag("BENCH_JSON_RESPONSE", True)
