"""A private 3-master Redis Cluster for the Cluster session-store scenario: three
``redis-server --cluster-enabled yes`` on free loopback ports, on the load CPU like the
standalone one, without persistence or replicas, joined with ``redis-cli --cluster create``.
Every node is tracked by :mod:`.processes` and ended by its PID."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from .config import REDIS_CLI_HINT, REDIS_HINT, ServerFailed
from .machine import Tools
from .processes import free_port, stop
from .redis_server import RedisDeployment, redis_info, redis_server, start_node

MASTERS = 3
# Redis refuses a cluster node's port above 55535: its cluster bus would be on port + 10000 by
# default. The bus port is set explicitly here (a free one), but the check stays.
_MAX_NODE_PORT = 55535


def _node_port(taken: set[int]) -> int:
    while True:
        port = free_port()
        if port <= _MAX_NODE_PORT and port not in taken:
            return port


@contextlib.contextmanager
def redis_cluster(tools: Tools, workdir: Path, masters: int = MASTERS) -> Iterator[RedisDeployment]:
    """``masters`` cluster nodes holding every slot between them; yields once each node reports
    ``cluster_state:ok``.

    Raises:
        ServerFailed: redis-server or redis-cli is missing, a node did not start, the cluster
            could not be created or did not become ready within 20 s.
    """
    if tools.redis is None:
        raise ServerFailed(REDIS_HINT)
    if tools.redis_cli is None:
        raise ServerFailed(REDIS_CLI_HINT)
    procs: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        taken: set[int] = set()
        for _ in range(masters):
            port = _node_port(taken)
            bus = free_port()
            taken |= {port, bus}
            folder = workdir / f"cluster-{port}"
            folder.mkdir()
            procs.append(start_node(tools, port, folder, "--cluster-enabled", "yes", "--cluster-config-file",
                                    str(folder / "nodes.conf"), "--cluster-node-timeout", "2000",
                                    "--cluster-port", str(bus)))
            ports.append(port)
        create = subprocess.run([*tools.load_prefix(), tools.redis_cli, "--cluster", "create",
                                 *[f"127.0.0.1:{p}" for p in ports], "--cluster-replicas", "0", "--cluster-yes"],
                                stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        if create.returncode != 0:
            out = (create.stdout + create.stderr).decode(errors="replace").strip()
            raise ServerFailed(f"redis-cli --cluster create failed: {out[-400:]}")
        deadline = time.monotonic() + 20
        for port in ports:
            while "cluster_state:ok" not in _cluster_info(port):
                if time.monotonic() > deadline:
                    raise ServerFailed(f"the Redis Cluster did not reach cluster_state:ok (node {port})")
                time.sleep(0.05)
        yield RedisDeployment("cluster", tuple(ports), tuple(p.pid for p in procs))
    finally:
        for proc in procs:
            stop(proc)


def _cluster_info(port: int) -> str:
    with contextlib.suppress(OSError):
        return redis_info(port, "CLUSTER INFO")
    return ""


def redis_for(mode: str) -> Callable[[Tools, Path], AbstractContextManager[RedisDeployment]]:
    """How to start a scenario's Redis: ``"cluster"`` (3 masters) or ``"standalone"``."""
    return redis_cluster if mode == "cluster" else redis_server
