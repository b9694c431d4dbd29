"""The servers under test: each is a module of benchmarks/servers/ with an ASGI ``app``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Server:
    """One server: its key on the command line, its label in the report, its module."""

    key: str
    label: str
    module: str
    peers: bool  # runs in benchmarks/.venv-peers instead of the project's .venv
    kind: str  # "framework" | "bare"
    # uvicorn's --http: mcpcore's is the protocol `mcpcore run` serves with (header caps, read
    # deadlines, a connection bound), so the benchmark measures what users run.
    http: str = "httptools"
    workers: int = 1  # uvicorn --workers (more than one: the server is pinned to every CPU, SERVER_CPUS)
    runtime: str = "python"  # "python" (uvicorn serving module:app) | "node" (node running the module file)


SERVERS: dict[str, Server] = {s.key: s for s in (
    Server("mcpcore", "mcpcore", "mcpcore_echo", False, "framework", "mcpcore.http_limits:LimitedHttpToolsProtocol"),
    Server("mcpcore_w2", "mcpcore --workers 2", "mcpcore_echo", False, "framework",
           "mcpcore.http_limits:LimitedHttpToolsProtocol", workers=2),
    Server("mcpcore_layers", "mcpcore, 3 layers + Depends", "mcpcore_layered", False, "framework",
           "mcpcore.http_limits:LimitedHttpToolsProtocol"),
    Server("sdk", "mcp SDK 2.3", "sdk_echo", True, "framework"),
    Server("sdk_low", "mcp SDK 2.3 low-level", "sdk_lowlevel_echo", True, "framework"),
    Server("fastmcp", "FastMCP 4.2", "fastmcp_echo", True, "framework"),
    Server("starlette", "bare Starlette", "starlette_echo", False, "bare"),
    Server("asgi", "pure ASGI (limit)", "asgi_echo", False, "bare"),
    Server("ts_sdk", "TS SDK 1.32 (Node 22)", "tm_ts_sdk.cjs", False, "framework", runtime="node"),
)}
ORDER = ["mcpcore", "sdk", "sdk_low", "fastmcp", "starlette", "asgi"]
"""The servers compared in the side-by-side scenarios, in report order."""
ALL = ["mcpcore", "mcpcore_w2", "mcpcore_layers", *ORDER[1:], "ts_sdk"]
"""Every server, in report order (``mcpcore_layers`` runs only in the ``layers_*`` scenarios,
``mcpcore_w2`` where a scenario lists it, ``ts_sdk`` only in the TM-style workload)."""
BASELINES = ["starlette", "asgi", "sdk", "sdk_low", "fastmcp", "mcpcore_w2"]

# Every run of a server starts from this environment; a scenario adds its own on top
# (benchmarks/scenarios/catalog.py). mcpcore reads MCP_* settings.
BASE_ENV = {"mcpcore": {"MCP_LOG_LEVEL": "warning"}, "mcpcore_w2": {"MCP_LOG_LEVEL": "warning"},
            "mcpcore_layers": {"MCP_LOG_LEVEL": "warning"}}


def label(key: str) -> str:
    """A server's label in the report (a variant label, such as "buffer on", stays as it is)."""
    return SERVERS[key].label if key in SERVERS else key
