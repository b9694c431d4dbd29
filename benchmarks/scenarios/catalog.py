"""Every scenario of the benchmark, in the order of the report."""

from __future__ import annotations

from ..harness.catalog import ORDER
from ..harness.scenario import Scenario
from ..harness.wire import echo_call

# Per-server environment. mcpcore reads MCP_* settings; the peer servers read BENCH_* switches
# (benchmarks/servers/_peer_env.py): the SDK's documented production configuration is
# stateless_http=True + json_response=True, turned off only where a scenario needs a session
# or an SSE response.
SESSION_ENV = {
    "mcpcore": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "memory"},
    "mcpcore_layers": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "memory"},
    "sdk": {"BENCH_STATELESS": "0", "BENCH_JSON_RESPONSE": "1"},
    "sdk_low": {"BENCH_STATELESS": "0", "BENCH_JSON_RESPONSE": "1"},
    "fastmcp": {"BENCH_STATELESS": "0", "BENCH_JSON_RESPONSE": "1"},
}
SSE_ENV = {
    # MCP_LOG_LEVEL is the floor of both of ctx.log's sinks; at "warning" no info line can
    # reach the client, so the logging scenario has to lower it (uvicorn's root logger stays at
    # warning, so nothing extra is written to the process log).
    "mcpcore": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "memory", "MCP_LOG_LEVEL": "info"},
    "sdk": {"BENCH_STATELESS": "0", "BENCH_JSON_RESPONSE": "0"},
    "sdk_low": {"BENCH_STATELESS": "0", "BENCH_JSON_RESPONSE": "0"},
    "fastmcp": {"BENCH_STATELESS": "0", "BENCH_JSON_RESPONSE": "0"},
}

NO_TASKS = "no tasks (python-sdk #2806)"
NO_REDIS_STORE = ("no pluggable session store: sessions live in a process-local dict "
                  "(python-peers.md §3)")
REDIS_SKIP = {"sdk": NO_REDIS_STORE, "sdk_low": NO_REDIS_STORE,
              "fastmcp": NO_REDIS_STORE + "; FastMCP's Redis stores hold app-level state, not transport sessions"}

SCENARIOS: list[Scenario] = [
    Scenario("call_2026", "tools/call, 2026-07-28, JSON",
             "One sessionless 2026-07-28 POST per request: envelope, routing headers, argument validation, "
             "tool call, JSON result. mcpcore --workers 2 runs on both cores, shared with wrk.",
             "load", "modern", "tools/call", echo_call(), "echo", ["mcpcore", "mcpcore_w2", *ORDER[1:]]),
    Scenario("call_2025", "tools/call, 2025 stateful session, JSON",
             "A 2025-11-25 session opened once (initialize + initialized); every request names it with "
             "Mcp-Session-Id. Adds the session lookup. The bare endpoints ignore the session header.",
             "load", "legacy", "tools/call", echo_call(), "echo", ORDER, env=SESSION_ENV),
    Scenario("call_2025_redis", "tools/call, 2025 session in the Redis session store",
             "As call_2025 with MCP_SESSION_STORE=redis (a redis-server of our own on CPU 1): every "
             "request reads the session from Redis. Ratios use the bare endpoints of call_2025; mcpcore in "
             "memory (call_2025's settings) is measured again here, interleaved, for the Redis/memory ratio.",
             "load", "legacy", "tools/call", echo_call(), "echo", ["mcpcore", "mcpcore_w2"], skip=REDIS_SKIP,
             env={"mcpcore": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "redis"},
                  "mcpcore_w2": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "redis"}},
             redis="standalone", baseline_from="call_2025", alongside="call_2025"),
    Scenario("call_2025_redis_cluster", "tools/call, 2025 session in the Redis session store on a Cluster",
             "As call_2025_redis with MCP_REDIS_MODE=cluster against a 3-master Redis Cluster of our own "
             "(three cluster-enabled redis-servers on CPU 1, joined by redis-cli --cluster create). Ratios use "
             "the bare endpoints of call_2025 and mcpcore in memory measured again here, interleaved; Redis commands "
             "are summed over the three nodes.",
             "load", "legacy", "tools/call", echo_call(), "echo", ["mcpcore"], skip=REDIS_SKIP,
             env={"mcpcore": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "redis",
                              "MCP_REDIS_MODE": "cluster"}},
             redis="cluster", baseline_from="call_2025", alongside="call_2025"),
    Scenario("call_logging_sse", "tools/call logging 3 lines, 2025 session, SSE",
             "A 2025 session with logging/setLevel info; the tool sends three notifications/message "
             "before its result, so the response is an SSE stream of four events.",
             "load", "legacy", "tools/call", echo_call("echo_logged"), "echo_sse", ORDER, env=SSE_ENV,
             log_level="info"),
    Scenario("tools_list", "tools/list, 2026-07-28, JSON",
             "A sessionless 2026-07-28 tools/list of two tools (cacheable list response).",
             "load", "modern", "tools/list", {}, "tools", ORDER),
    Scenario("resources_read", "resources/read, 2026-07-28, JSON",
             "A sessionless 2026-07-28 resources/read of a short static text resource.",
             "load", "modern", "resources/read", {"uri": "bench://doc"}, "doc", ORDER),
    Scenario("sse_buffer", "SSE response, event buffer on vs off (mcpcore)",
             "call_logging_sse on mcpcore alone with MCP_HTTP_RESUMABILITY=true and =false, the two "
             "interleaved: what the resumability event buffer adds to an SSE response.",
             "ab", "legacy", "tools/call", echo_call("echo_logged"), "echo_sse", ["mcpcore"],
             skip=dict.fromkeys(("sdk", "sdk_low", "fastmcp"), "the event buffer is mcpcore's own setting"),
             env=SSE_ENV, log_level="info",
             variants={"buffer on": {"MCP_HTTP_RESUMABILITY": "true"},
                       "buffer off": {"MCP_HTTP_RESUMABILITY": "false"}}),
    Scenario("instr_2026", "Instructions per tools/call, 2026-07-28 (valgrind)",
             "call_2026's exact request, each server under valgrind's cachegrind: the instructions it "
             "executes per request in user space (interpreter, extensions, uvloop, httptools; not the kernel). "
             "Unlike req/s on a shared machine this count does not move between runs (see "
             "benchmarks/scenarios/instructions.py).",
             "instructions", "modern", "tools/call", echo_call(), "echo", ORDER),
    Scenario("instr_2026_metrics", "Instructions per tools/call with Prometheus metrics on, 2026-07-28 (valgrind)",
             "instr_2026's request and count on mcpcore with MCP_METRICS_ENABLED=true: what counting and timing "
             "each call for /metrics costs per request (instr_2026 is the same server with metrics off).",
             "instructions", "modern", "tools/call", echo_call(), "echo", ["mcpcore"],
             skip=dict.fromkeys(("sdk", "sdk_low", "fastmcp", "starlette", "asgi"), "mcpcore's own setting"),
             env={"mcpcore": {"MCP_METRICS_ENABLED": "true"}}),
    Scenario("instr_2025", "Instructions per tools/call, 2025 stateful session (valgrind)",
             "call_2025's exact request and session, counted as in instr_2026.",
             "instructions", "legacy", "tools/call", echo_call(), "echo", ORDER, env=SESSION_ENV),
    Scenario("layers_2026", "Instructions per tools/call with 3 middleware layers and 1 Depends, 2026-07-28",
             "instr_2026's request on mcpcore as is and on the same app with three pass-through middleware "
             "layers (on_request, on_call_tool, on_request) and a dependency (an async function) on the tool "
             "(benchmarks/servers/mcpcore_layered.py): what the layers and Depends cost per request.",
             "instructions", "modern", "tools/call", echo_call(), "echo", ["mcpcore", "mcpcore_layers"]),
    Scenario("layers_2025", "Instructions per tools/call with 3 middleware layers and 1 Depends, 2025 session",
             "layers_2026 on a 2025-11-25 session, as instr_2025.",
             "instructions", "legacy", "tools/call", echo_call(), "echo", ["mcpcore", "mcpcore_layers"],
             env=SESSION_ENV),
    Scenario("layers_gen_2026", "As layers_2026, the dependency an async generator with cleanup",
             "layers_2026 with BENCH_DEPENDS=generator: the dependency yields its value and runs code after the "
             "yield once the tool returned, as a database session does.",
             "instructions", "modern", "tools/call", echo_call(), "echo", ["mcpcore", "mcpcore_layers"],
             env={"mcpcore_layers": {"BENCH_DEPENDS": "generator"}}),
    Scenario("layers_gen_2025", "As layers_2025, the dependency an async generator with cleanup",
             "layers_2025 with BENCH_DEPENDS=generator.",
             "instructions", "legacy", "tools/call", echo_call(), "echo", ["mcpcore", "mcpcore_layers"],
             env={**SESSION_ENV, "mcpcore_layers": {**SESSION_ENV["mcpcore_layers"], "BENCH_DEPENDS": "generator"}}),
    Scenario("tasks_get", "tasks/get of a finished task, against tools/list (mcpcore)",
             "A 2026-07-28 tasks/get (the client declares the tasks extension) of one finished task, and "
             "tools/list, loaded in turn on the same server in the same run, with the memory and the Redis "
             "stores; then the CPU a server left idle with 1,000 finished tasks uses over 10 s "
             "(benchmarks/scenarios/tasks.py).",
             "tasks", "modern", "tasks/get", {}, "task", ["mcpcore"],
             skip={"sdk": NO_TASKS, "sdk_low": NO_TASKS,
                   "fastmcp": "tasks need the fastmcp-tasks package and its Docket workers (not installed)",
                   "starlette": "no tasks", "asgi": "no tasks"},
             env={"mcpcore": {"BENCH_TASKS": "1"}},
             variants={"memory": {"MCP_SESSION_STORE": "memory"}, "redis": {"MCP_SESSION_STORE": "redis"}},
             capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}}),
    Scenario("instr_2025_redis", "Instructions per tools/call, 2025 session in the Redis session store (valgrind)",
             "call_2025_redis's exact request and store (a redis-server of our own), counted as in instr_2025: "
             "set against mcpcore's count there, what the Redis store costs per request without the noise of "
             "req/s.",
             "instructions", "legacy", "tools/call", echo_call(), "echo", ["mcpcore"], skip=REDIS_SKIP,
             env={"mcpcore": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "redis"}},
             redis="standalone", baseline_from="instr_2025"),
    Scenario("instr_2025_redis_cluster", "Instructions per tools/call, 2025 session in the Redis store on a "
             "Cluster (valgrind)",
             "call_2025_redis_cluster's exact request, store and 3-master Cluster, counted as in instr_2025.",
             "instructions", "legacy", "tools/call", echo_call(), "echo", ["mcpcore"], skip=REDIS_SKIP,
             env={"mcpcore": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "redis",
                              "MCP_REDIS_MODE": "cluster"}},
             redis="cluster", baseline_from="instr_2025"),
    Scenario("idle_sessions", "RSS of idle 2025 sessions (memory store)",
             "Open N 2025 sessions (initialize + notifications/initialized) and leave them idle; RSS "
             "after minus RSS before (the server was warmed by opening and deleting 20 sessions).",
             "sessions", "legacy", servers=["mcpcore", "sdk", "fastmcp"],
             skip={"sdk_low": "same StreamableHTTPSessionManager as the mcp SDK column (sessions are "
                              "transport-level in the SDK)",
                   "starlette": "keeps no sessions", "asgi": "keeps no sessions"}, env=SESSION_ENV),
]
TM_SESSION_ENV = {
    "mcpcore": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "memory"},
    "mcpcore_w2": {"MCP_SESSION_MODE": "stateful", "MCP_SESSION_STORE": "memory"},
    "sdk": {"BENCH_STATELESS": "0", "BENCH_JSON_RESPONSE": "1"},
    "fastmcp": {"BENCH_STATELESS": "0", "BENCH_JSON_RESPONSE": "1"},
    "ts_sdk": {"BENCH_STATELESS": "0"},
}
TM_SERVERS = ["mcpcore", "mcpcore_w2", "sdk", "fastmcp", "ts_sdk"]
TM_NO_OTHERS = {"sdk_low": "the workload runs the documented high-level APIs",
                "starlette": "not an MCP server", "asgi": "not an MCP server"}
SCENARIOS += [
    Scenario("tm_session", "TM-style workload: a full session per tool call",
             "TM Dev Lab's MCP benchmark v2 rebuilt: 50 virtual users, each looping over initialize, "
             "notifications/initialized, tools/call and DELETE (2025-11-25, JSON responses); the call cycles through "
             "three tools that each do a GET to a catalog HTTP API and Redis round trips (benchmarks/harness/tm.py). "
             "mcpcore also with the Redis session store.",
             "tm", "legacy", "tools/call", servers=TM_SERVERS, skip=TM_NO_OTHERS, env=TM_SESSION_ENV,
             variants={"mcpcore, Redis session store": {"MCP_SESSION_STORE": "redis"}}),
    Scenario("tm_sessionless", "TM-style workload: sessionless 2026-07-28 tool calls",
             "tm_session's tools, users and arguments, each tool call one 2026-07-28 POST (no initialize, no session, "
             "no DELETE).",
             "tm", "modern", "tools/call", servers=TM_SERVERS, skip=TM_NO_OTHERS,
             env={"ts_sdk": {"BENCH_STATELESS": "1"}},
             unable={"ts_sdk": "the TS SDK 1.32 speaks protocol versions up to 2025-11-25 only, not the sessionless "
                               "2026-07-28"}),
]
SCENARIO_BY_ID = {s.id: s for s in SCENARIOS}
