"""The private Redis of the Redis session-store scenarios (never the system one): what a scenario
is given of it (``RedisDeployment``: its URL, its processes and counters summed over its nodes),
and the standalone redis-server. The Cluster is started by :mod:`.redis_cluster`."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .config import REDIS_HINT, ServerFailed
from .machine import Tools
from .processes import free_port, stop, track
from .sampling import proc_cpu_seconds

# Counted in INFO commandstats but sent by the harness itself, not by the server under test.
HARNESS_COMMANDS = ("info", "config", "ping", "flushall", "dbsize")


@dataclass(frozen=True)
class RedisDeployment:
    """A Redis the harness started: ``standalone`` (one node) or ``cluster`` (its masters).

    Every counter is summed over the nodes, so a request that touches two nodes counts both."""

    mode: str
    ports: tuple[int, ...]
    pids: tuple[int, ...]

    @property
    def url(self) -> str:
        """``REDIS_URL`` for the server under test (a Cluster client learns the others from it)."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def flush(self) -> None:
        """Drop every key on every node (FLUSHALL on each; a Cluster node flushes its own slots)."""
        for port in self.ports:
            redis_command(port, "FLUSHALL")

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT on every node, so ``calls`` counts from now."""
        for port in self.ports:
            redis_command(port, "CONFIG", "RESETSTAT")

    def calls(self) -> dict[str, int]:
        """Calls per command since ``reset_stats``, summed over the nodes."""
        out: dict[str, int] = {}
        for port in self.ports:
            for name, n in redis_calls(port).items():
                out[name] = out.get(name, 0) + n
        return out

    def keys(self) -> int:
        """Keys held over all nodes (DBSIZE summed; -1 when a node's reply is not an integer)."""
        sizes = [redis_keys(port) for port in self.ports]
        return -1 if min(sizes) < 0 else sum(sizes)

    def cpu_seconds(self) -> float | None:
        """CPU time of every node's process, summed (None when one cannot be read)."""
        total = 0.0
        for pid in self.pids:
            cpu = proc_cpu_seconds(pid)
            if cpu is None:
                return None
            total += cpu
        return total


def redis_command(port: int, *args: str) -> bytes:
    """Send one command and return the first chunk of the reply."""
    payload = f"*{len(args)}\r\n".encode() + b"".join(f"${len(a)}\r\n{a}\r\n".encode() for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(payload)
        return s.recv(65536)


def redis_info(port: int, section: str) -> str:
    """The text of ``INFO <section>`` (or of another command whose reply is one bulk string,
    such as ``CLUSTER INFO`` given as ``"CLUSTER", "INFO"``)."""
    args = section.split()
    payload = f"*{len(args)}\r\n".encode() + b"".join(f"${len(a)}\r\n{a}\r\n".encode() for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(payload)
        data = b""
        while not data.endswith(b"\r\n") or data.count(b"\r\n") < 2 or len(data) < _bulk_len(data):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace")


def start_node(tools: Tools, port: int, folder: Path, *extra: str) -> subprocess.Popen[bytes]:
    """One redis-server on ``port`` on the load CPU, without persistence, tracked for ``stop_all``;
    returns once it answers PING.

    Raises:
        ServerFailed: redis-server is not installed, or did not start within 10 s.
    """
    if tools.redis is None:
        raise ServerFailed(REDIS_HINT)
    cmd = [*tools.load_prefix(), tools.redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "no", "--daemonize", "no", "--dir", str(folder), "--loglevel", "warning", *extra]
    with open(folder / f"redis-{port}.log", "wb") as logf:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
    track(proc)
    deadline = time.monotonic() + 10
    while True:
        with contextlib.suppress(OSError):
            if redis_command(port, "PING").startswith(b"+PONG"):
                return proc
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            tail = (folder / f"redis-{port}.log").read_text(errors="replace")[-300:]
            raise ServerFailed(f"redis-server on port {port} did not start: {tail.strip()}")
        time.sleep(0.05)


@contextlib.contextmanager
def redis_server(tools: Tools, workdir: Path) -> Iterator[RedisDeployment]:
    """A standalone redis-server on a free port on the load CPU, without persistence."""
    port = free_port()
    proc = start_node(tools, port, workdir)
    try:
        yield RedisDeployment("standalone", (port,), (proc.pid,))
    finally:
        stop(proc)


def redis_calls(port: int) -> dict[str, int]:
    """Calls per command since the last CONFIG RESETSTAT (INFO commandstats), less the harness's own."""
    out: dict[str, int] = {}
    for line in redis_info(port, "INFO commandstats").splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[len("cmdstat_"):].split(":", 1)
            fields = dict(kv.split("=", 1) for kv in rest.split(","))
            if name.split("|")[0] not in HARNESS_COMMANDS:
                out[name] = int(fields["calls"])
    return out


def _bulk_len(data: bytes) -> int:
    """Total length of a RESP bulk-string reply (``$<n>\\r\\n...\\r\\n``) once its header is in."""
    if not data.startswith(b"$") or b"\r\n" not in data:
        return 1 << 30
    head, _ = data.split(b"\r\n", 1)
    return len(head) + 2 + int(head[1:]) + 2


def redis_keys(port: int) -> int:
    """DBSIZE (-1 when the reply is not an integer)."""
    reply = redis_command(port, "DBSIZE")
    return int(reply[1:].split(b"\r\n", 1)[0]) if reply.startswith(b":") else -1
