"""Figures over repeats (medians) and mcpcore's ratios to each baseline."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from .catalog import BASELINES
from .scenario import Scenario


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One server's result in one load scenario: medians of the samples, with each sample kept."""
    def med(key: str) -> float | None:
        vals = [r[key] for r in runs if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    out: dict[str, Any] = {"status": "ok"}
    for key in ("rps", "rps_cpu", "cpu_us_per_request", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "rss_mb", "hwm_mb",
                "server_cpu", "wrk_cpu", "core0_other", "core1_other", "bytes_per_response",
                "calls_per_s", "cpu_us_per_call", "services_cpu"):  # the last three: the TM-style workload only
        if key in runs[0]:
            out[key] = med(key)
    out["errors"] = sum(r["errors"] for r in runs)
    for key in ("app_errors", "calls"):  # the TM-style workload only
        if key in runs[0]:
            out[key] = sum(r[key] for r in runs)
    out["requests"] = sum(r["requests"] for r in runs)
    out["rps_min"] = min(r["rps"] for r in runs)
    out["rps_max"] = max(r["rps"] for r in runs)
    out["check"] = runs[0]["check"]
    if "set_level" in runs[0]:
        out["set_level"] = runs[0]["set_level"]
    if "redis_calls_per_request" in runs[0]:
        out["redis_calls_per_request"] = runs[-1]["redis_calls_per_request"]
        cpus = [r["redis_cpu"] for r in runs if r.get("redis_cpu") is not None]
        out["redis_cpu"] = statistics.median(cpus) if cpus else None
        out["redis_nodes"] = runs[-1].get("redis_nodes", 1)
    keep = ("rps", "calls_per_s", "rps_cpu", "p50_ms", "p99_ms", "rss_mb", "server_cpu", "wrk_cpu", "core0_other",
            "core1_other", "errors", "attempts", "quality")
    out["repeats"] = [{k: r.get(k) for k in keep} for r in runs]
    out["below_quality_bar"] = sum(1 for r in runs if r.get("quality"))
    return out


def ratios(results: dict[str, Any], scenarios: Mapping[str, Scenario]) -> dict[str, Any]:
    """mcpcore / baseline for every baseline measured in the same run (same scenario, or the
    scenario named by ``baseline_from`` for the bare endpoints). A scenario with ``alongside`` or
    ``baseline_from`` is also set against mcpcore's own figures in that scenario (key
    ``"mcpcore"``; the interleaved run when there is one): for the Redis scenarios, the Redis
    session store over the in-memory one."""
    out: dict[str, Any] = {}
    for sid, sc_res in results.items():
        sc = scenarios[sid]
        if sc.kind != "load":
            continue
        m = sc_res["servers"].get("mcpcore", {})
        if m.get("status") != "ok":
            continue
        r: dict[str, Any] = {}
        for b in BASELINES:
            src = sc_res["servers"].get(b)
            origin = sid
            if (src is None or src.get("status") != "ok") and sc.baseline_from and b in ("starlette", "asgi"):
                src = results.get(sc.baseline_from, {}).get("servers", {}).get(b)
                origin = sc.baseline_from
            if not src or src.get("status") != "ok":
                continue
            r[b] = _ratio(m, src, origin)
        own, origin = _own_baseline(sc_res["servers"], results, sc)
        if own is not None:
            r["mcpcore"] = _ratio(m, own, origin)
            r["mcpcore"]["rounds"] = _rounds(m, own)
        out[sid] = r
    return out


def _ratio(m: dict[str, Any], src: dict[str, Any], origin: str) -> dict[str, Any]:
    """mcpcore's medians over another result's (req/s, req per CPU-second, p50, p99, RSS)."""
    return {"from": origin, "rps": m["rps"] / src["rps"],
            "rps_cpu": m["rps_cpu"] / src["rps_cpu"] if m.get("rps_cpu") and src.get("rps_cpu") else None,
            "p50": m["p50_ms"] / src["p50_ms"],
            "p99": m["p99_ms"] / src["p99_ms"],
            "rss": (m["rss_mb"] / src["rss_mb"]) if m.get("rss_mb") and src.get("rss_mb") else None}


def _own_baseline(servers: dict[str, Any], results: dict[str, Any],
                  sc: Scenario) -> tuple[dict[str, Any] | None, str]:
    """mcpcore's figures to set this scenario's against, and where they come from: its
    interleaved run of ``sc.alongside``, else ``sc.baseline_from``'s run (None: neither)."""
    for r in servers.values():
        if r.get("as_in") and r.get("status") == "ok":
            return r, f"{r['as_in']}, interleaved"
    own = results.get(sc.baseline_from or "", {}).get("servers", {}).get("mcpcore")
    if sc.baseline_from and own and own.get("status") == "ok":
        return own, sc.baseline_from
    return None, ""


def _rounds(m: dict[str, Any], src: dict[str, Any]) -> list[float]:
    """req/s over the other result's, round by round (repeat i of one against repeat i of the
    other: seconds apart for an interleaved run, minutes apart for another scenario's)."""
    return [a["rps"] / b["rps"] for a, b in zip(m.get("repeats", []), src.get("repeats", []), strict=False)
            if a.get("rps") and b.get("rps")]
