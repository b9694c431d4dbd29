"""The README's benchmark section, rendered from a run's ``results.json``.

``make bench`` (writing to the default ``docs/bench``) rewrites the part of ``README.md`` between
the two markers below, so the README always shows the latest committed run; a test checks that
the two agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PUBLISHED = "https://github.com/mcpcore/mcpcore"
"""Where the README's links point: it is read on the package index too, where relative links break
(the ``Repository`` URL of pyproject.toml; tests/docs/test_readme_links.py keeps them equal)."""
RAW = "https://raw.githubusercontent.com/mcpcore/mcpcore/main"
START = "<!-- bench:start (written by make bench from docs/bench/results.json) -->"
END = "<!-- bench:end -->"

SCENARIOS = ["call_2026", "call_2025", "call_2025_redis", "call_2025_redis_cluster", "call_logging_sse", "tools_list",
             "resources_read"]
PEERS = [("starlette", "bare Starlette"), ("asgi", "pure ASGI (limit)"), ("sdk", "mcp SDK 2.3"),
         ("sdk_low", "mcp SDK 2.3 low-level"), ("fastmcp", "FastMCP 4.2")]


TM = [("tm_session", "a full session per tool call (published form)"),
      ("tm_sessionless", "sessionless 2026-07-28 calls")]
TM_SERVERS = [("mcpcore_w2", "mcpcore --workers 2"), ("mcpcore, Redis session store", "mcpcore, Redis sessions"),
              ("sdk", "mcp SDK 2.3"), ("fastmcp", "FastMCP 4.2"), ("ts_sdk", "TS SDK 1.32 on Node 22")]


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}x"


def _tm_lines(res: dict[str, Any]) -> list[str]:
    """The TM-style workload's table: mcpcore's figures, every other server's req/s as a ratio."""
    rows = [(sid, what, res[sid]["servers"]) for sid, what in TM
            if res.get(sid, {}).get("servers", {}).get("mcpcore", {}).get("status") == "ok"]
    if not rows:
        return []
    out = ["TM-style workload (after TM Dev Lab's MCP benchmark v2: 50 virtual users, three tools doing real Redis "
           "and HTTP I/O; [benchmarks/README.md](" + PUBLISHED + "/blob/main/benchmarks/README.md)): HTTP req/s, "
           "then each server's req/s over mcpcore's (higher is better for that server). The published run (k6, 2 vCPU "
           "per server) had the Rust SDK at 4,845 req/s and Python FastMCP at 259 req/s; here every server but "
           "mcpcore --workers 2 has one core.", "",
           "| form | mcpcore req/s (calls/s; p50 / p99 ms) | " + " | ".join(n for _, n in TM_SERVERS) + " |",
           "|---|---:|" + "---:|" * len(TM_SERVERS)]
    for _sid, what, servers in rows:
        mine = servers["mcpcore"]
        cells = [what, f"{mine['rps']:,.0f} ({mine.get('calls_per_s') or 0:,.0f}; {mine['p50_ms']:.1f} / "
                       f"{mine['p99_ms']:.1f})"]
        for key, _ in TM_SERVERS:
            r = servers.get(key, {})
            if r.get("status") == "ok":
                cells.append(f"{r['rps']:,.0f} ({r['rps'] / mine['rps']:.2f}x)")
            else:
                cells.append(r.get("status", "not run"))
        out.append("| " + " | ".join(cells) + " |")
    return [*out, ""]


def render_section(report: dict[str, Any], results_dir: str = "docs/bench") -> str:
    """The markdown between the markers (markers included)."""
    meta = report["meta"]
    m = meta["machine"]
    s = meta["settings"]
    src = meta["source"]
    res = report["results"]
    rat = report["ratios"]
    out = [START, ""]
    out.append(f"Latest run: {meta['date']}, {m['nproc']} x {m['cpu_model']}, {m.get('mem_gb')} GB, "
               f"Linux {m['kernel']}, Python {m['python']}, commit {src['commit']}; "
               f"`{meta['command']}`. Each server alone under uvicorn (uvloop, httptools, one worker) on one "
               f"pinned core, wrk ({s['connections']} connections) on the other; medians of {s['repeat']} runs of "
               f"{s['duration']} s. Ratios are mcpcore's req/s over the other server's, from the same run "
               f"(higher is better); the Redis row compares with the in-memory servers' `call_2025`. "
               f"All tables: [{results_dir}/results.md]({PUBLISHED}/blob/main/{results_dir}/results.md)."
               + (f" The machine was shared: load average {m['loadavg_start'][0]:.1f} at the start, "
                  f"{m['loadavg_end'][0]:.1f} at the end, on {m['nproc']} CPUs." if m.get("loadavg_start")
                  and m.get("loadavg_end") else ""))
    out.append("")
    out.append("| scenario | mcpcore req/s | " + " | ".join(f"vs {label}" for _, label in PEERS)
               + " | p99 vs bare Starlette |")
    out.append("|---|---:|" + "---:|" * len(PEERS) + "---:|")
    for sc in SCENARIOS:
        r = res.get(sc)
        mine = (r or {}).get("servers", {}).get("mcpcore", {})
        if mine.get("status") != "ok":
            continue
        cells = [f"{r['title']} (`{sc}`)", f"{mine['rps']:,.0f}"]
        for key, _ in PEERS:
            cells.append(_x(rat.get(sc, {}).get(key, {}).get("rps")))
        cells.append(_x(rat.get(sc, {}).get("starlette", {}).get("p99")))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    idle = res.get("idle_sessions", {}).get("servers", {})
    per = [f"{label} {idle[key]['kb_per_session']:.1f} KB" for key, label in
           [("mcpcore", "mcpcore"), ("sdk", "mcp SDK 2.3"), ("fastmcp", "FastMCP 4.2")]
           if idle.get(key, {}).get("status") == "ok"]
    if idle.get("mcpcore", {}).get("status") == "ok":
        out.append(f"Idle sessions: {idle['mcpcore']['opened']:,} idle 2025 sessions add "
                   f"{idle['mcpcore']['delta_mb']:.1f} MB to mcpcore's RSS; per session: " + ", ".join(per) + ".")
    buf = res.get("sse_buffer", {}).get("servers", {})
    on, off = buf.get("buffer on", {}), buf.get("buffer off", {})
    if on.get("status") == "ok" and off.get("status") == "ok":
        out.append(f"Event buffer: resumability adds {off['rps'] / on['rps'] - 1:+.1%} to an SSE response "
                   "(req/s with the buffer off over on).")
    for sc, what in (("instr_2026", "tools/call 2026-07-28"), ("instr_2025", "tools/call in a 2025 session")):
        servers = res.get(sc, {}).get("servers", {})
        mine = servers.get("mcpcore", {})
        if mine.get("status") != "ok":
            continue
        others = [f"{label} {servers[key]['ir']:,.0f} ({mine['ir'] / servers[key]['ir']:.2f}x)" for key, label in PEERS
                  if servers.get(key, {}).get("status") == "ok"]
        out.append(f"Instructions per request under valgrind (`{sc}`, {what}; user space, does not vary between "
                   f"runs; lower is better): mcpcore {mine['ir']:,.0f}; " + ", ".join(others)
                   + " (in brackets: mcpcore's count over that server's).")
    out.append("")
    out += _tm_lines(res)
    out.append("| issue 9 target | this run | verdict |")
    out.append("|---|---:|---|")
    for t in report["targets"]:
        value = f"{t['value']:.2f}x" if t["unit"] == "x" else (
            f"{t['value']:+.1%}" if t["unit"] == "frac" else f"{t['value']:.1f} {t['unit']}")
        out.append(f"| {t['target']} | {value} | {t['verdict']} |")
    out.append("")
    out.append(f"![requests per second, mcpcore and the other servers]({RAW}/{results_dir}/chart.png)")
    out.append("")
    out.append(END)
    return "\n".join(out)


def update_readme(report: dict[str, Any], readme: Path, results_dir: str = "docs/bench") -> bool:
    """Replace the marked section of ``readme``; ``False`` (nothing written) when it has no markers."""
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        return False
    new = text[:start] + render_section(report, results_dir) + text[end + len(END):]
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return True
