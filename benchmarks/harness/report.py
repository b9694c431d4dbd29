"""The report: results.json, results.md (with the chart when matplotlib is at hand) and the
README's benchmark section. A scenario's own table comes from its ``Family``."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from .catalog import SERVERS, label
from .config import HARNESS, OUT_DIR, ROOT, log
from .readme import update_readme
from .scenario import Family, Scenario


def fmt(v: Any, spec: str = ",.0f", none: str = "—") -> str:
    """A number for a table cell, a dash when it is missing."""
    return none if v is None else format(v, spec)


def cell(text: Any) -> str:
    """Text for a table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def times(v: float | None) -> str:
    """A ratio as ``1.23x``, a dash when it is missing."""
    return "—" if v is None else f"{v:.2f}x"


def _header(meta: dict[str, Any]) -> list[str]:
    m = meta["machine"]
    v = meta["versions"]
    s = meta["settings"]
    out = [f"# MCP server benchmark — {meta['date']}", ""]
    out.append(f"Machine: {m['nproc']} x {m['cpu_model']}, {m.get('mem_gb')} GB, Linux {m['kernel']}, "
               f"Python {m['python']}. Pinning: "
               f"{'server on CPU 0, wrk/redis/harness on CPU 1' if s['pinned'] else 'NONE'}"
               + (f"; server, wrk and redis-server at nice {s['nice']}." if s.get("nice") else "."))
    if m.get("loadavg_start") and m.get("loadavg_end"):
        out.append(f"Machine load (1/5/15-minute load averages; {m['nproc']} CPUs, shared with other work): "
                   f"{'/'.join(f'{x:.1f}' for x in m['loadavg_start'])} at the start, "
                   f"{'/'.join(f'{x:.1f}' for x in m['loadavg_end'])} at the end.")
    vv = ", ".join(f"{k} {val}" for k, val in v.items() if val and k not in ("python",))
    out.append(f"Versions: {vv}.")
    out.append(f"Load: wrk {s['threads']} thread, {s['connections']} connections, {s['duration']} s x "
               f"{s['repeat']} (median; servers interleaved and restarted per repeat), {s['warmup']} s warm-up, "
               "uvicorn with uvloop + httptools, one worker, access log off, log level warning.")
    out.append("Columns: req/s, p50 and RSS are medians over the repeats (min-max of req/s in brackets); CPU us/req "
               "= the server's own CPU time per request (its cost per request, which CPU taken by other work does not "
               "inflate the way it cuts req/s; \"req per CPU-s\" in the ratio tables is its inverse); server "
               "CPU = the server process's CPU time / wall time (near 100% = its core is the bottleneck); wrk CPU = "
               "the load generator's share of CPU 1; other load = each core busy with anything else (other "
               "processes, interrupts; not our own redis-servers, whose CPU is given with their command counts): the "
               "noise gauge of a shared "
               "machine; response = what the pre-load check received for the exact request wrk sends.")
    out.append(f"Quality bar: a sample counts when CPU 0 was at most {s.get('max_noise', 0.1) * 100:.0f}% busy with "
               f"other work and the server used at least {s.get('min_server_cpu', 0.9) * 100:.0f}% of it; a sample "
               f"below the bar is measured again (up to {s.get('retries', 2)} more times) and the best attempt "
               "kept. (!n) after a server = n of its samples never met the bar.")
    src = meta.get("source", {})
    out.append(f"Command: `{meta['command']}` at commit {src.get('commit')}"
               + (" with uncommitted changes in mcpcore/" if src.get("mcpcore_uncommitted_changes") else "")
               + (" (the commit or mcpcore/ changed while it ran)" if src.get("changed_during_run") else "") + ".")
    out.append("")
    return out


def _after_table(sc_res: dict[str, Any], rat: dict[str, Any]) -> list[str]:
    """What follows every scenario's table: skipped servers, Redis counters, refused setLevel,
    and the ratio table."""
    out: list[str] = []
    servers = sc_res["servers"]
    skipped = sc_res.get("skipped", {})
    if skipped:
        out.append("")
        for key, why in skipped.items():
            out.append(f"- {SERVERS[key].label}: skipped — {why}")
    for k, r in servers.items():
        if r.get("redis_calls_per_request") is not None:
            calls = ", ".join(f"{c} {n:g}" for c, n in r["redis_calls_per_request"].items()) or "none"
            nodes = r.get("redis_nodes", 1)
            out += ["", f"Redis commands per request ({label(k)}"
                        + (f", summed over the {nodes} nodes" if nodes > 1 else "") + f"): {calls}; "
                        f"redis-server CPU {(r.get('redis_cpu') or 0) * 100:.0f}% of CPU 1"
                        + (" (all nodes)." if nodes > 1 else ".")]
    notes = [f"- {SERVERS[k].label}: logging/setLevel {cell(r['set_level'])} (the logs arrived anyway; "
             "the check requires all three)" for k, r in servers.items()
             if k in SERVERS and r.get("set_level") and r["set_level"] != "ok"]
    if notes:
        out += ["", *notes]
    if rat:
        out += ["", "mcpcore relative to each baseline (req/s and req per CPU-second: higher is better; p50, "
                    "p99 and RSS: lower is better):", ""]
        out.append("| vs | req/s | req per CPU-s | p50 | p99 | RSS | figures from |")
        out.append("|---|---:|---:|---:|---:|---:|---|")
        for b, rr in rat.items():
            name = f"{SERVERS[b].label} itself" if b == "mcpcore" else SERVERS[b].label
            out.append(f"| {name} | {times(rr['rps'])} | {times(rr.get('rps_cpu'))} | {times(rr['p50'])} | "
                       f"{times(rr['p99'])} | {times(rr['rss'])} | `{rr['from']}` |")
        own = rat.get("mcpcore")
        if own and own.get("rounds"):
            out += ["", f"mcpcore's req/s over its own in `{own['from']}`, round by round (repeat i of each): "
                        + ", ".join(times(v) for v in own["rounds"]) + f"; ratio of the medians {times(own['rps'])}"
                        + (f"; per CPU-second {times(own['rps_cpu'])}." if own.get("rps_cpu") else ".")]
    return out


def _targets_table(targets: list[dict[str, Any]]) -> list[str]:
    out = ["## Issue 9 targets, this run", "", "| Target | Value | Verdict | Note |", "|---|---:|---|---|"]
    for t in targets:
        if t["value"] is None:
            val = "—"
        elif t.get("unit") == "frac":
            val = f"{t['value'] * 100:+.1f}%"
        elif t.get("unit") == "MB":
            val = f"{t['value']:.1f} MB"
        else:
            val = f"{t['value']:.2f}x"
        out.append(f"| {t['target']} | {val} | {t['verdict']} | {cell(t.get('note', ''))} |")
    out.append("")
    return out


def render_markdown(report: dict[str, Any], scenarios: Mapping[str, Scenario],
                    families: Mapping[str, Family]) -> str:
    """results.md: the run's conditions, one section per scenario, the targets."""
    out = _header(report["meta"])
    for sid, sc_res in report["results"].items():
        sc = scenarios[sid]
        family = families[sc.kind]
        out += [f"## {sc.title} (`{sid}`)", "", sc.measures, ""]
        out += family.table(sc, sc_res["servers"])
        out += _after_table(sc_res, report["ratios"].get(sid) or {})
        out += family.notes(sc, sc_res["servers"])
        out.append("")
    out += _targets_table(report["targets"])
    return "\n".join(out)


def render_chart(report_path: Path, chart_path: Path, python: dict[str, Path]) -> str | None:
    """Render the PNG with matplotlib from the peers' venv (the project's deps stay lean)."""
    candidates = [p for p in (python.get("peers"), python.get("main")) if p and Path(p).exists()]
    for py in candidates:
        probe = subprocess.run([str(py), "-c", "import matplotlib"], capture_output=True)
        if probe.returncode == 0:
            r = subprocess.run([str(py), str(HARNESS / "chart.py"), str(report_path), str(chart_path)],
                               capture_output=True, text=True, timeout=120)
            if r.returncode == 0:
                return None
            return f"chart failed: {r.stderr.strip()[-300:]}"
    return "no matplotlib (it lives in benchmarks/.venv-peers; run a full benchmark once to create it)"


def write_report(report: dict[str, Any], md: str, out_dir: Path, python: dict[str, Path], chart: bool,
                 readme: bool, elapsed: float) -> None:
    """Write results.json, the chart (when ``chart``) and results.md into ``out_dir``, print the
    markdown, and rewrite README.md's section when ``readme``."""
    json_path = out_dir / "results.json"
    json_path.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    chart_note = None
    if chart:
        chart_note = render_chart(json_path, out_dir / "chart.png", python)
        if chart_note is None:
            md = md.replace("\n## ", "\n![chart](chart.png)\n\n## ", 1)
        else:
            log(f"(no chart: {chart_note})")
    (out_dir / "results.md").write_text(md)
    print()
    print(md)
    if readme and update_readme(report, ROOT / "README.md", str(OUT_DIR.relative_to(ROOT))):
        log("updated the benchmark section of README.md")
    log(f"wrote {json_path}, {out_dir / 'results.md'}" + ("" if chart_note or not chart
                                                           else f", {out_dir / 'chart.png'}")
        + f" in {elapsed:.0f} s")
