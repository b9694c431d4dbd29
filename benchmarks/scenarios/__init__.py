"""The scenarios: what is measured (``catalog``) and one module per family of scenarios, each
providing a ``FAMILY`` (how its scenarios run and show in results.md).

    catalog        every scenario, in report order, with its servers and settings
    load           wrk loads of one request against each server (call_*, tools_list, resources_read;
                   the Redis ones against a standalone redis-server or a 3-master Cluster)
    sse_buffer     the A/B of mcpcore's event buffer on and off (on the load family's runner)
    instructions   instructions per request under valgrind (instr_*; the Redis ones with their own Redis)
    idle_sessions  the RSS of many idle 2025 sessions
    tm             the TM-style workload (a session per tool call, and sessionless), servers interleaved
    targets        issue 9's and issue 18's targets checked against a run

They import ``benchmarks.harness``; the harness never imports them.
"""
