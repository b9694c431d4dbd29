"""Real Redis topologies for tests: a 3-master Cluster and a primary + replica + 3 sentinels,
each on free loopback ports in a temporary folder, every process stopped by PID at the end."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.storage.conftest import INSTALL_HINT, free_port

__all__ = ["SentinelSet", "Topology", "redis_alone", "redis_cluster", "redis_sentinel_set", "redis_topology"]

MASTER = "mcpcore-primary"


def _exe(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return exe


def _ask(port: int, *words: str) -> str:
    """One inline command over a raw socket; the reply's text ('' when nothing answers)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall((" ".join(words) + "\r\n").encode())
            s.settimeout(1)
            data = b""
            while not data.endswith(b"\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            if data.startswith(b"$"):  # a bulk string: read its whole length
                size = int(data[1:data.index(b"\r\n")])
                head = data.index(b"\r\n") + 2
                while len(data) < head + size + 2:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                return data[head:head + size].decode(errors="replace")
            return data.decode(errors="replace")
    except OSError:
        return ""


def _wait(what: str, check: Callable[[], bool], timeout: float = 20, log: Path | None = None,
          proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline or (proc is not None and proc.poll() is not None):
            tail = log.read_text(errors="replace")[-800:] if log is not None and log.exists() else ""
            raise RuntimeError(f"timed out waiting for {what}{': ' + tail if tail else ''}")
        time.sleep(0.05)


def _node_port() -> int:
    """A free port a cluster node accepts (Redis refuses ports above 55535 in cluster mode)."""
    while True:
        port = free_port()
        if port <= 55535:
            return port


@dataclass
class Topology:
    """What a test needs to point instances at a topology: the environment and the processes."""

    mode: str
    env: dict[str, str]
    procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)  # by port
    commands: dict[int, tuple[list[str], Path]] = field(default_factory=dict)  # by port: argv, log

    @property
    def url(self) -> str:
        return self.env.get("REDIS_URL", "")

    def stop(self, port: int) -> None:
        """SIGTERM the server on ``port`` and wait for it."""
        proc = self.procs[port]
        proc.terminate()
        proc.wait(10)

    def start(self, port: int) -> None:
        """Start the server on ``port`` again with its first command line (a cluster node keeps
        its identity and slots in nodes.conf); returns once it answers PING."""
        args, log = self.commands[port]
        self.procs[port] = _start(args, log)
        _wait(f"server {port}", lambda: _ask(port, "PING").startswith("+PONG"), log=log, proc=self.procs[port])


@dataclass
class SentinelSet(Topology):
    data_ports: list[int] = field(default_factory=list)
    sentinel_ports: list[int] = field(default_factory=list)

    def primary_port(self, sentinel: int = 0) -> int | None:
        """The port a sentinel currently names as primary (None when it does not answer)."""
        reply = _ask(self.sentinel_ports[sentinel], "SENTINEL", "get-master-addr-by-name", MASTER)
        lines = [ln for ln in reply.split("\r\n") if ln and not ln.startswith(("*", "$"))]
        return int(lines[1]) if len(lines) == 2 else None

    def replica_in_sync(self, primary: int | None = None) -> bool:
        """The primary (by default the one the sentinels name) has one replica, online."""
        port = primary or self.primary_port()
        if port is None:
            return False
        info = _ask(port, "INFO", "replication")
        return "role:master" in info and "connected_slaves:1" in info and "state=online" in info


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)


def _stop(procs: dict[int, subprocess.Popen[bytes]]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()
    for proc in procs.values():
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _server(port: int, folder: Path, *extra: str) -> list[str]:
    return [_exe("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(folder), "--daemonize", "no", *extra]


@contextlib.contextmanager
def redis_alone(tmp: Path, *extra: str, port: int | None = None) -> Iterator[int]:
    """One ``redis-server`` with ``extra`` arguments (``--requirepass``, ``--cluster-enabled yes``)
    on ``port`` or a free one; yields the port once it answers anything, stopped by PID at the end."""
    tmp.mkdir(parents=True, exist_ok=True)
    port = port or _node_port()
    log = tmp / f"redis-{port}.log"
    proc = _start(_server(port, tmp, *extra), log)
    try:
        _wait(f"redis-server {port}", lambda: _ask(port, "PING") != "", log=log, proc=proc)
        yield port
    finally:
        _stop({port: proc})


@contextlib.contextmanager
def redis_cluster(tmp: Path, masters: int = 3) -> Iterator[Topology]:
    """``masters`` cluster-enabled servers joined with ``redis-cli --cluster create`` (no
    replicas); yields once every node reports ``cluster_state:ok``."""
    tmp.mkdir(parents=True, exist_ok=True)
    ports = [_node_port() for _ in range(masters)]
    procs: dict[int, subprocess.Popen[bytes]] = {}
    commands: dict[int, tuple[list[str], Path]] = {}
    try:
        for port in ports:
            folder = tmp / f"node-{port}"
            folder.mkdir()
            # The cluster bus port is chosen too (the default, port + 10000, may be taken).
            commands[port] = (_server(port, folder, "--cluster-enabled", "yes", "--cluster-config-file",
                                      str(folder / "nodes.conf"), "--cluster-node-timeout", "2000",
                                      "--cluster-port", str(free_port())), tmp / f"node-{port}.log")
            procs[port] = _start(*commands[port])
        for port in ports:
            _wait(f"cluster node {port}", lambda p=port: procs[p].poll() is None and _ask(p, "PING").startswith(
                "+PONG"), log=tmp / f"node-{port}.log", proc=procs[port])
        create = subprocess.run([_exe("redis-cli"), "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
                                 "--cluster-replicas", "0", "--cluster-yes"], capture_output=True, timeout=60)
        if create.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {create.stdout[-1000:]!r} {create.stderr[-500:]!r}")
        for port in ports:
            _wait(f"cluster_state:ok on {port}", lambda p=port: "cluster_state:ok" in _ask(p, "CLUSTER", "INFO"))
        yield Topology("cluster", {"MCP_REDIS_MODE": "cluster", "REDIS_URL": f"redis://127.0.0.1:{ports[0]}/0"},
                       procs, commands)
    finally:
        _stop(procs)


@contextlib.contextmanager
def redis_sentinel_set(tmp: Path, down_after_ms: int = 1000) -> Iterator[SentinelSet]:
    """A primary, one replica and three sentinels watching them (quorum 2); yields once the
    replica is in sync and every sentinel knows the primary, its replica and the other sentinels."""
    tmp.mkdir(parents=True, exist_ok=True)
    primary, replica = free_port(), free_port()
    sentinels = [free_port() for _ in range(3)]
    procs: dict[int, subprocess.Popen[bytes]] = {}
    try:
        for port, extra in ((primary, []), (replica, ["--replicaof", "127.0.0.1", str(primary)])):
            folder = tmp / f"data-{port}"
            folder.mkdir()
            procs[port] = _start(_server(port, folder, *extra), tmp / f"data-{port}.log")
        for port in sentinels:
            conf = tmp / f"sentinel-{port}.conf"
            conf.write_text(f"port {port}\nbind 127.0.0.1\ndir {tmp}\n"
                            f"sentinel monitor {MASTER} 127.0.0.1 {primary} 2\n"
                            f"sentinel down-after-milliseconds {MASTER} {down_after_ms}\n"
                            f"sentinel failover-timeout {MASTER} 4000\n"
                            f"sentinel parallel-syncs {MASTER} 1\n")
            procs[port] = _start([_exe("redis-server"), str(conf), "--sentinel"], tmp / f"sentinel-{port}.log")
        topo = SentinelSet("sentinel", {
            "MCP_REDIS_MODE": "sentinel", "MCP_REDIS_SENTINEL_MASTER": MASTER,
            "MCP_REDIS_SENTINELS": ",".join(f"127.0.0.1:{p}" for p in sentinels)}, procs, {}, [primary, replica],
            sentinels)
        _wait("the replica to sync", lambda: topo.replica_in_sync(primary))

        def known() -> bool:
            for port in sentinels:
                info = _ask(port, "INFO", "sentinel")
                if "status=ok" not in info or "slaves=1" not in info or "sentinels=3" not in info:
                    return False
            return True

        _wait("the sentinels to discover each other", known, 30)
        yield topo
    finally:
        _stop(procs)


@contextlib.contextmanager
def redis_topology(mode: str, tmp: Path) -> Iterator[Topology]:
    """``standalone`` (one server), ``cluster`` or ``sentinel``."""
    if mode == "cluster":
        with redis_cluster(tmp) as topo:
            yield topo
    elif mode == "sentinel":
        with redis_sentinel_set(tmp) as s:
            yield s
    else:
        from tests.storage.conftest import redis_server

        tmp.mkdir(parents=True, exist_ok=True)
        with redis_server(tmp / "redis.log") as (url, proc):
            yield Topology("standalone", {"REDIS_URL": url}, {int(url.rsplit(":", 1)[1].split("/")[0]): proc})
