"""Render docs/bench/chart.png from results.json (run by harness/report.py with benchmarks/.venv-peers).

    benchmarks/.venv-peers/bin/python benchmarks/harness/chart.py docs/bench/results.json docs/bench/chart.png
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ORDER = ["mcpcore", "sdk", "sdk_low", "fastmcp", "starlette", "asgi"]
LABELS = {"mcpcore": "mcpcore", "sdk": "mcp SDK 2.3", "sdk_low": "mcp SDK low-level", "fastmcp": "FastMCP 4.2",
          "starlette": "bare Starlette", "asgi": "pure ASGI (limit)"}
COLORS = {"mcpcore": "#d62728", "sdk": "#1f77b4", "sdk_low": "#17becf", "fastmcp": "#9467bd", "starlette": "#7f7f7f",
          "asgi": "#bcbd22"}
SHORT = {"call_2026": "tools/call\n2026 JSON", "call_2025": "tools/call\n2025 session",
         "call_2025_redis": "tools/call\n2025 Redis", "call_2025_redis_cluster": "tools/call\n2025 Cluster",
         "call_logging_sse": "tools/call\n3 logs, SSE", "tools_list": "tools/list\n2026",
         "resources_read": "resources/read\n2026"}


def main(src: str, dst: str) -> None:
    with open(src) as f:
        report = json.load(f)
    results = report["results"]
    scen = [s for s in SHORT if s in results]
    fig, (ax1, ax3, ax2) = plt.subplots(3, 1, figsize=(12, 11), sharex=True)
    width = 0.135
    for i, key in enumerate(ORDER):
        xs, rps, cost, p99 = [], [], [], []
        for j, sid in enumerate(scen):
            r = results[sid]["servers"].get(key)
            if r and r.get("status") == "ok":
                xs.append(j + (i - (len(ORDER) - 1) / 2) * width)
                rps.append(r["rps"])
                cost.append(r.get("cpu_us_per_request") or 0)
                p99.append(r["p99_ms"])
        if not xs:
            continue
        bars = ax1.bar(xs, rps, width, label=LABELS[key], color=COLORS[key])
        ax1.bar_label(bars, labels=[f"{v / 1000:.1f}k" for v in rps], fontsize=6, padding=1)
        bars = ax3.bar(xs, cost, width, label=LABELS[key], color=COLORS[key])
        ax3.bar_label(bars, labels=[f"{v:.0f}" for v in cost], fontsize=6, padding=1)
        ax2.bar(xs, p99, width, label=LABELS[key], color=COLORS[key])
    ax1.set_ylabel("requests / s (higher is better)")
    ax3.set_ylabel("server CPU us / request\n(lower is better)")
    ax2.set_ylabel("p99 latency, ms, log\n(lower is better)")
    ax2.set_yscale("log")
    ax2.set_xticks(range(len(scen)), [SHORT[s] for s in scen])
    ax1.legend(ncol=6, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    ax1.set_ylim(top=ax1.get_ylim()[1] * 1.08)
    for ax in (ax1, ax2, ax3):
        ax.grid(axis="y", alpha=0.3)
    meta = report["meta"]
    m, s = meta["machine"], meta["settings"]
    fig.suptitle(f"MCP servers on uvicorn, one worker pinned to one core — {meta['date']}\n"
                 f"{m['nproc']} x {m['cpu_model']}; wrk {s['connections']} connections, {s['duration']} s x "
                 f"{s['repeat']} (median)", fontsize=10)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
