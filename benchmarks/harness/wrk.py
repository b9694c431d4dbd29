"""Driving wrk: the Lua script for a scenario's request, and one run parsed into numbers."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import orjson

from .config import ServerFailed
from .machine import Tools
from .sampling import LoadSettings, children_cpu_seconds
from .scenario import Scenario
from .wire import request_message


def wrk_script(sc: Scenario, headers: dict[str, str]) -> str:
    """A Lua script: the scenario's request with a fresh JSON-RPC id per request (2025 sessions
    must not reuse ids), and a done() that prints the summary and percentiles as JSON."""
    body = orjson.dumps(request_message(sc, 0)).decode()
    marker = '"id":0,'
    pre, post = body.split(marker, 1)
    pre += '"id":'
    post = "," + post
    lines = ['wrk.method = "POST"']
    lines += [f'wrk.headers["{k}"] = [==[{v}]==]' for k, v in headers.items()]
    lines += [
        f"local pre = [==[{pre}]==]",
        f"local post = [==[{post}]==]",
        "local n = 0",
        "local nthreads = 0",
        "function setup(thread)",
        "  thread:set('base', nthreads * 100000000)",
        "  nthreads = nthreads + 1",
        "end",
        "function request()",
        "  n = n + 1",
        "  return wrk.format(nil, nil, nil, pre .. ((base or 0) + n) .. post)",
        "end",
        "function done(summary, latency, requests)",
        "  local e = summary.errors",
        "  io.write(string.format('BENCHJSON {\"requests\":%d,\"duration_us\":%d,\"bytes\":%d,'"
        " .. '\"err_connect\":%d,\"err_read\":%d,\"err_write\":%d,\"err_status\":%d,\"err_timeout\":%d,'"
        " .. '\"p50_us\":%d,\"p90_us\":%d,\"p99_us\":%d,\"p999_us\":%d,\"max_us\":%d,\"mean_us\":%.1f}\\n',"
        " summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,"
        " latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),"
        " latency.max, latency.mean))",
        "end",
    ]
    return "\n".join(lines) + "\n"


def run_wrk(tools: Tools, script: Path, url: str, seconds: int, ls: LoadSettings) -> dict[str, Any]:
    """One wrk run of ``seconds`` on the load CPU: its JSON summary plus wrk's own CPU share."""
    cmd = [*tools.load_prefix(), tools.wrk, "-t", str(ls.threads), "-c", str(ls.connections), "-d", f"{seconds}s",
           "--timeout", "5s", "-s", str(script), url]
    cpu0 = children_cpu_seconds()
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    wall = time.monotonic() - t0
    cpu1 = children_cpu_seconds()
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("BENCHJSON ")), None)
    if out.returncode != 0 or line is None:
        raise ServerFailed(f"wrk failed (rc {out.returncode}): {(out.stderr or out.stdout)[-400:]}")
    data: dict[str, Any] = orjson.loads(line[len("BENCHJSON "):])
    data["wrk_cpu"] = (cpu1 - cpu0) / wall if wall > 0 else None
    return data
