"""The benchmark harness still works end to end (``make bench-smoke``): every server module it
starts in the project's virtualenv answers the echo call, with wrk loads of a second, and the
TM-style workload runs in both forms with sane figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.run import smoke


def _sane_load(r: dict[str, Any]) -> None:
    assert r["status"] == "ok", r
    assert r["rps"] > 0 and r["errors"] == 0 and r["app_errors"] == 0, r
    assert 0 < r["p50_ms"] <= r["p99_ms"] < 30_000, r
    assert 10 < r["rss_mb"] < 4_000, r
    assert r["server_cpu"] and r["server_cpu"] > 0, r


@pytest.mark.slow
@pytest.mark.timeout(600)  # a dozen servers started in turn, two under valgrind, a Redis Cluster: ~90 s when quiet
def test_bench_smoke(tmp_path: Path) -> None:
    assert smoke(tmp_path) == 0
    results = json.loads((tmp_path / "results.json").read_text())["results"]
    assert results["call_2026"]["servers"]["mcpcore_w2"]["status"] == "ok"
    session = results["tm_session"]["servers"]
    assert list(session) == ["mcpcore", "mcpcore, Redis session store", "mcpcore_w2", "sdk", "ts_sdk"]
    for r in session.values():
        _sane_load(r)
        # Every tool call is four HTTP requests (initialize, initialized, call, DELETE); the load
        # ends with each of the 50 connections up to three requests into a session, or one short.
        assert 4 * r["calls"] - 50 <= r["requests"] <= 4 * r["calls"] + 150, r
        assert r["calls"] > 0
        assert 200 <= r["check"]["delete"] < 300 and r["check"]["after_delete"] == 404, r
    sessionless = results["tm_sessionless"]["servers"]
    for key in ("mcpcore", "sdk"):
        _sane_load(sessionless[key])
        assert sessionless[key]["calls"] == sessionless[key]["requests"]
    ts = sessionless["ts_sdk"]
    assert ts["status"] == "not available" and "Unsupported protocol version: 2026-07-28" in ts["reason"], ts
