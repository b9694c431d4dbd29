"""A private redis-server for the Redis session-store scenario (never the system one), and the
counters read from it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from .config import REDIS_HINT, ServerFailed
from .machine import Tools
from .processes import free_port, stop, track


def redis_command(port: int, *args: str) -> bytes:
    """Send one command and return the first chunk of the reply."""
    payload = f"*{len(args)}\r\n".encode() + b"".join(f"${len(a)}\r\n{a}\r\n".encode() for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(payload)
        return s.recv(65536)


@contextlib.contextmanager
def redis_server(tools: Tools, workdir: Path) -> Iterator[tuple[int, int]]:
    """A redis-server on a free port on the load CPU, without persistence: (port, pid)."""
    if tools.redis is None:
        raise ServerFailed(REDIS_HINT)
    port = free_port()
    cmd = [*tools.load_prefix(), tools.redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "no", "--daemonize", "no", "--dir", str(workdir), "--loglevel", "warning"]
    with open(workdir / f"redis-{port}.log", "wb") as logf:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
    track(proc)
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError):
                if redis_command(port, "PING").startswith(b"+PONG"):
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ServerFailed("redis-server did not start")
            time.sleep(0.05)
        yield port, proc.pid
    finally:
        stop(proc)


def redis_calls(port: int) -> dict[str, int]:
    """Calls per command since the last CONFIG RESETSTAT (INFO commandstats)."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")
        data = b""
        while not data.endswith(b"\r\n") or data.count(b"\r\n") < 2 or len(data) < _bulk_len(data):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    out: dict[str, int] = {}
    for line in data.decode(errors="replace").splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[len("cmdstat_"):].split(":", 1)
            fields = dict(kv.split("=", 1) for kv in rest.split(","))
            if name.split("|")[0] not in ("info", "config", "ping", "flushall", "dbsize"):
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
