"""Instructions per tools/call with host identity against the same call with no auth (issue 29:
within 3 %), counted by valgrind in process: the ASGI app called directly on uvloop, as
``benchmarks.inprocess`` calls it, with the scope a host app's ``AuthenticationMiddleware``
filled (a Starlette user and its credentials) in both runs.

    .venv/bin/python -m benchmarks.identity_cost              # the table: both eras, both apps
    PYTHONHASHSEED=0 valgrind --tool=callgrind .venv/bin/python -m benchmarks.identity_cost \\
        --one host 2026 --requests 3000                     # one run, as the table runs each

Each app and era runs under ``valgrind --tool=callgrind`` (user space) at two request counts
after the same warm-up; the cost of one call is the difference of the two totals over the
difference of the counts, so start-up and shutdown cancel.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .inprocess import call, load_app, request_for

ROOT = Path(__file__).resolve().parents[1]
LOW, HIGH, WARM = 1000, 3000, 300


def build(auth: str) -> Any:
    """The echo server's definitions as an app with no auth or with host identity, behind the
    host's user (set on every request's scope, as Starlette's middleware does)."""
    from starlette.authentication import AuthCredentials, SimpleUser

    from mcpcore import McpApp
    from mcpcore.auth import HostIdentity

    load_app("mcpcore")  # imports the echo server's module (its own app is not used)
    bench = sys.modules["mcpcore_echo"]
    app = McpApp("bench", "1.0", tools=[bench.echo, bench.echo_logged], resources=[bench.doc],
                 auth=HostIdentity(tenant="acme") if auth == "host" else None)
    user, credentials = SimpleUser("alice"), AuthCredentials(["echo"])

    async def host(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope["user"], scope["auth"] = user, credentials
        await app(scope, receive, send)

    return app, host


async def run(auth: str, era: str, requests: int) -> None:
    app, host = build(auth)
    await app.startup()
    body, headers = await request_for(host, era)
    for _ in range(WARM + requests):
        sent = await call(host, body, headers)
    if sent[0]["status"] != 200:
        raise SystemExit(f"{auth} {era}: HTTP {sent[0]['status']}: {sent[1].get('body', b'')[:200]!r}")
    await app.shutdown()


def _total(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no totals in {path}")


def counted(auth: str, era: str, requests: int) -> int:
    """Instructions of one run under callgrind."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (`apt-get install -y valgrind`)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "MCP_LOG_LEVEL": "warning"}
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
                        "benchmarks.identity_cost", "--one", auth, era, "--requests", str(requests)],
                       cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return _total(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--one", nargs=2, metavar=("AUTH", "ERA"), help="one run: none|host and 2026|2025")
    p.add_argument("--requests", type=int, default=HIGH)
    p.add_argument("--eras", default="2026,2025")
    args = p.parse_args(argv)
    if args.one:
        import logging

        import uvloop

        logging.disable(logging.WARNING)
        uvloop.run(run(args.one[0], args.one[1], args.requests))
        return 0
    print(f"| era | no auth (instr/call) | host identity (instr/call) | difference |   ({LOW} and {HIGH} calls)")
    print("|---|---:|---:|---:|")
    for era in [e for e in args.eras.split(",") if e]:
        cost = {auth: (counted(auth, era, HIGH) - counted(auth, era, LOW)) / (HIGH - LOW) for auth in ("none", "host")}
        diff = cost["host"] / cost["none"] - 1
        print(f"| {era} | {cost['none']:,.0f} | {cost['host']:,.0f} | {diff:+.2%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
