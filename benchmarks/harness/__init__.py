"""The benchmark harness: the machinery every scenario uses, knowing no scenario by name.

Imports run one way: ``benchmarks.scenarios`` and ``benchmarks.suite`` import this package, never
the reverse (tests/test_bench_layout.py checks it).

    config         paths, CPU assignment, protocol constants, the two errors, log()
    catalog        the servers under test (key, label, module, which virtualenv)
    processes      every process the harness starts, ended by PID
    launch         starting one server under uvicorn (the only place the command line is built)
    machine        tools found on this machine, pinning, versions, the peers' virtualenv
    sampling       /proc readings, the wait for quiet cores, the quality bar (LoadSettings)
    wire           MCP requests as the harness sends them, the answer checks, sessions
    wrk            the Lua script for a scenario and one wrk run
    redis_server   a private redis-server for the Redis scenarios; RedisDeployment and its counters
    redis_cluster  a private 3-master Redis Cluster (three nodes joined by redis-cli)
    tm             the TM-style workload: its Redis and catalog API, its wrk script, its answer checks
    scenario       what a scenario is (Scenario), a run's context (Ctx), a family (Family)
    stats          medians over repeats, mcpcore/baseline ratios
    report         results.md, results.json, the chart and the README section
    readme         the README's benchmark section
    chart          renders chart.png (run as a script by the peers' python)
"""
