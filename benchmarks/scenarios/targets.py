"""Issue 9's targets (and issue 18's Redis session store against the memory store), checked
against one run's results and ratios."""

from __future__ import annotations

from typing import Any


def targets(results: dict[str, Any], rat: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 9's and issue 18's targets, checked against this run."""
    rows: list[dict[str, Any]] = []

    def add(name: str, value: float | None, limit: float, higher_is_better: bool, unit: str, why: str = "") -> None:
        if value is None:
            rows.append({"target": name, "value": None, "verdict": "not measured", "note": why})
            return
        ok = value >= limit if higher_is_better else value <= limit
        rows.append({"target": name, "value": value, "limit": limit, "unit": unit, "verdict": "met" if ok else "MISSED",
                     "note": why})

    for sid in ("call_2026", "call_2025"):
        if sid not in results:
            continue
        r = rat.get(sid, {})

        instr = results.get(sid.replace("call_", "instr_"), {}).get("servers", {})

        def per_cpu(b: str, r: dict[str, Any] = r, instr: dict[str, Any] = instr) -> str:
            v = r.get(b, {}).get("rps_cpu")
            note = f"per CPU-second: {v:.2f}x" if v else ""
            mine, other = instr.get("mcpcore", {}), instr.get(b, {})
            if mine.get("status") == "ok" and other.get("status") == "ok":
                note += f"; instructions per request: {mine['ir'] / other['ir']:.2f}x"
            return note

        add(f"{sid}: req/s vs bare Starlette >= 1.0x", r.get("starlette", {}).get("rps"), 1.0, True, "x",
            per_cpu("starlette"))
        add(f"{sid}: req/s vs pure ASGI >= 0.6x", r.get("asgi", {}).get("rps"), 0.6, True, "x", per_cpu("asgi"))
        add(f"{sid}: p99 vs bare Starlette <= 1.5x", r.get("starlette", {}).get("p99"), 1.5, False, "x")
    if "call_2025_redis" in results:
        m = results["call_2025_redis"]["servers"].get("mcpcore", {})
        rr = rat.get("call_2025_redis", {}).get("starlette", {})
        add("call_2025_redis: req/s vs bare Starlette >= 0.6x", rr.get("rps"), 0.6, True, "x",
            (f"per CPU-second: {rr['rps_cpu']:.2f}x" if rr.get("rps_cpu") else "") if m.get("status") == "ok"
            else f"{m.get('status')}: {m.get('reason', '')}")
    # Issue 18: the Redis session store costs at most a tenth of the in-memory store's req/s.
    for sid, where in (("call_2025_redis", "standalone Redis"), ("call_2025_redis_cluster", "Redis Cluster")):
        if sid in results:
            add(f"{sid}: req/s vs mcpcore's call_2025 (memory store) >= 0.9x ({where})",
                rat.get(sid, {}).get("mcpcore", {}).get("rps"), 0.9, True, "x", _own_note(results, rat, sid))
    if "idle_sessions" in results:
        m = results["idle_sessions"]["servers"].get("mcpcore", {})
        n = m.get("opened")
        add(f"idle_sessions: {n or '?'} idle sessions <= 30 MB over an empty server",
            m.get("delta_mb") if m.get("status") == "ok" else None, 30.0, False, "MB",
            "" if m.get("status") == "ok" else m.get("reason", ""))
    if "sse_buffer" in results:
        s = results["sse_buffer"]["servers"]
        on, off = s.get("buffer on", {}), s.get("buffer off", {})
        if on.get("status") == "ok" and off.get("status") == "ok":
            cost = off["rps"] / on["rps"] - 1
            why = ""
            if on["check"].get("sse_ids", 0) == 0:
                why = ("no SSE event ids with MCP_HTTP_RESUMABILITY=true: the buffer does not seem to be "
                       "wired into POST responses, so this compares two identical configurations")
            if why:
                rows.append({"target": "sse_buffer: buffer adds <= 10% per SSE response", "value": cost, "limit": 0.10,
                             "unit": "frac", "verdict": "not measurable", "note": why})
            else:
                add("sse_buffer: buffer adds <= 10% per SSE response", cost, 0.10, False, "frac")
        else:
            add("sse_buffer: buffer adds <= 10% per SSE response", None, 0.10, False, "frac", "a variant failed")
    return rows


def _own_note(results: dict[str, Any], rat: dict[str, Any], sid: str) -> str:
    """Why a Redis-over-memory ratio is missing, or the evidence beside it: per CPU-second and
    round by round."""
    m = results[sid]["servers"].get("mcpcore", {})
    if m.get("status") != "ok":
        return f"{m.get('status')}: {m.get('reason', '')}"
    own = rat.get(sid, {}).get("mcpcore")
    if not own:
        return "call_2025 was not measured for mcpcore in this run"
    note = f"per CPU-second: {own['rps_cpu']:.2f}x" if own.get("rps_cpu") else ""
    if own.get("rounds"):
        note += ("; " if note else "") + "by round: " + ", ".join(f"{v:.2f}x" for v in own["rounds"])
    mine = results.get(sid.replace("call_", "instr_"), {}).get("servers", {}).get("mcpcore", {})
    memory = results.get("instr_2025", {}).get("servers", {}).get("mcpcore", {})
    if mine.get("status") == "ok" and memory.get("status") == "ok":
        note += (("; " if note else "") + f"instructions per request over the memory store's: "
                 f"{mine['ir'] / memory['ir']:.2f}x (lower is better)")
    return note
