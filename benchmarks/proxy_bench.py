"""A proxied ``tools/call`` against a direct one (issue 31): the mcpcore echo server alone, and
the same server behind an mcpcore gateway that mounts it with ``proxy(url)``, each loaded by wrk,
interleaved round by round, in both eras (the gateway speaks the client's era to the backend).

    .venv/bin/python -m benchmarks.proxy_bench                    # 3 rounds of 5 s per side and era
    .venv/bin/python -m benchmarks.proxy_bench --duration 10 --rounds 5 --connections 32
    make bench-proxy                                              # the same, from make (PROXY_BENCH_ARGS)

Prints, per era, the median req/s of each side, their ratio, the median p50/p99 latencies with
what the proxy adds, and the CPU the servers spend per call (backend and gateway together; the
steadiest figure on a shared machine). The machine is not isolated (no CPU pinning, unlike ``make bench``):
read the ratio, not the absolute figures; the backend, the gateway and wrk share its cores.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson

from .harness.config import ACCEPT, LEGACY, MODERN, TEXT
from .harness.wire import open_session

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / "benchmarks" / "servers"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


PIDS: dict[str, int] = {}
"""The process serving each URL :func:`bench_server` yielded."""


@contextlib.contextmanager
def bench_server(module: str, env: dict[str, str]) -> Iterator[str]:
    port = _port()
    full = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "BENCH_", "REDIS_URL"))}
    full.update({"MCP_LOG_LEVEL": "warning", "PYTHONDONTWRITEBYTECODE": "1", **env})
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--app-dir", str(SERVERS), f"{module}:app",
                             "--host", "127.0.0.1", "--port", str(port), "--loop", "uvloop", "--http", "httptools",
                             "--no-access-log", "--log-level", "warning"], env=full, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    PIDS[url] = proc.pid
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{module} did not start")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _call(era: str, tool: str, session: str | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The params and headers of one echo tools/call in ``era`` (2025: on ``session``)."""
    params: dict[str, Any] = {"name": tool, "arguments": {"text": TEXT}}
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    if era == "modern":
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": {}}
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool})
    else:
        headers.update({"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": session or ""})
    return params, headers


def _script(era: str, tool: str, session: str | None) -> str:
    params, headers = _call(era, tool, session)
    body = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": params}).decode()
    pre, post = body.split('"id":0,', 1)
    lines = ['wrk.method = "POST"', *(f'wrk.headers["{k}"] = [==[{v}]==]' for k, v in headers.items()),
             f"local pre = [==[{pre}\"id\":]==]", f"local post = [==[,{post}]==]", "local n = 0",
             "function request() n = n + 1 return wrk.format(nil, nil, nil, pre .. n .. post) end",
             "function done(summary, latency, requests)",
             "  io.write(string.format('BENCHJSON {\"requests\":%d,\"duration_us\":%d,\"errors\":%d,"
             "\"p50_us\":%d,\"p99_us\":%d}\\n', summary.requests, summary.duration, summary.errors.connect"
             " + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout,"
             " latency:percentile(50), latency:percentile(99)))",
             "end"]
    return "\n".join(lines) + "\n"


def _check(url: str, era: str, tool: str, session: str | None) -> None:
    """One call answered with the echo (a broken proxy must not be measured as a fast one)."""
    params, headers = _call(era, tool, session)
    r = httpx.post(url, content=orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
                   headers=headers, timeout=10)
    result = r.json().get("result") or {}
    if r.status_code != 200 or result.get("isError") or TEXT not in orjson.dumps(result).decode():
        raise RuntimeError(f"{tool} at {url} did not echo: HTTP {r.status_code} {r.text[:300]}")


def _wrk(url: str, script: Path, seconds: int, connections: int) -> dict[str, Any]:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is missing (apt-get install wrk)")
    out = subprocess.run([wrk, "-t", "1", "-c", str(connections), "-d", f"{seconds}s", "--timeout", "5s",
                          "-s", str(script), url], capture_output=True, text=True, timeout=seconds + 60)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("BENCHJSON ")), None)
    if out.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed: {(out.stderr or out.stdout)[-400:]}")
    data: dict[str, Any] = orjson.loads(line[len("BENCHJSON "):])
    data["rps"] = data["requests"] / (data["duration_us"] / 1e6)
    return data


def measure(era: str, seconds: int, rounds: int, connections: int) -> dict[str, Any]:
    """Both sides of one era, interleaved: ``{"direct": [...], "proxied": [...]}`` of wrk runs."""
    with bench_server("mcpcore_echo", {"MCP_SESSION_MODE": "stateful"}) as backend, \
            bench_server("mcpcore_proxy", {"MCP_SESSION_MODE": "stateful", "BENCH_BACKEND": backend,
                                      "BENCH_BACKEND_ERA": era}) as gateway, \
            tempfile.TemporaryDirectory() as tmp, httpx.Client(timeout=10) as http:
        sides: dict[str, tuple[str, str, str | None]] = {}
        for side, url, tool in (("direct", backend, "echo"), ("proxied", gateway, "be_echo")):
            session = open_session(http, url, None)["session_id"] if era == "legacy" else None
            _check(url, era, tool, session)
            sides[side] = (url, tool, session)
        runs: dict[str, list[dict[str, Any]]] = {"direct": [], "proxied": []}
        for _ in range(rounds):
            for side, (url, tool, session) in sides.items():
                script = Path(tmp) / f"{side}.lua"
                script.write_text(_script(era, tool, session))
                before = cpu_seconds(PIDS[gateway]), cpu_seconds(PIDS[backend])
                run = _wrk(url, script, seconds, connections)
                after = cpu_seconds(PIDS[gateway]), cpu_seconds(PIDS[backend])
                n = max(run["requests"], 1)  # CPU per request: steadier than req/s on a shared machine
                run["cpu_ms"] = ((after[0] - before[0]) + (after[1] - before[1])) * 1000 / n
                runs[side].append(run)
        return runs


def summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    med = {side: {k: statistics.median(r[k] for r in rs) for k in ("rps", "p50_us", "p99_us", "cpu_ms")}
           for side, rs in runs.items()}
    d, p = med["direct"], med["proxied"]
    return {"direct_rps": d["rps"], "proxied_rps": p["rps"], "ratio": p["rps"] / d["rps"],
            "direct_p50_ms": d["p50_us"] / 1000, "proxied_p50_ms": p["p50_us"] / 1000,
            "added_p50_ms": (p["p50_us"] - d["p50_us"]) / 1000, "direct_p99_ms": d["p99_us"] / 1000,
            "proxied_p99_ms": p["p99_us"] / 1000, "added_p99_ms": (p["p99_us"] - d["p99_us"]) / 1000,
            "direct_cpu_ms": d["cpu_ms"], "proxied_cpu_ms": p["cpu_ms"],
            "errors": sum(r["errors"] for rs in runs.values() for r in rs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--duration", type=int, default=5, help="seconds of each wrk run (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per side, interleaved (default 3)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (default 16)")
    parser.add_argument("--era", choices=["modern", "legacy", "both"], default="both")
    args = parser.parse_args(argv)
    eras = ["modern", "legacy"] if args.era == "both" else [args.era]
    print(f"proxied vs direct tools/call: {args.rounds} x {args.duration} s per side, {args.connections} "
          "connections, medians")
    print("| era | direct req/s | proxied req/s | ratio | direct p50/p99 ms | proxied p50/p99 ms | added p50/p99 ms "
          "| server CPU ms/call direct, proxied |")
    print("|---|---|---|---|---|---|---|---|")
    for era in eras:
        s = summary(measure(era, args.duration, args.rounds, args.connections))
        label = "2026-07-28" if era == "modern" else "2025 session"
        print(f"| {label} | {s['direct_rps']:.0f} | {s['proxied_rps']:.0f} | {s['ratio']:.2f}x | "
              f"{s['direct_p50_ms']:.2f} / {s['direct_p99_ms']:.2f} | {s['proxied_p50_ms']:.2f} / "
              f"{s['proxied_p99_ms']:.2f} | {s['added_p50_ms']:+.2f} / {s['added_p99_ms']:+.2f} | "
              f"{s['direct_cpu_ms']:.2f}, {s['proxied_cpu_ms']:.2f} |"
              + (f" ({s['errors']:.0f} errors)" if s["errors"] else ""), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
