"""Several uvicorn instances sharing one Redis topology (a server, a Cluster or a Sentinel set),
a round-robin client, and a minimal round-robin HTTP proxy (test scaffolding, not product)."""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any

import anyio
import httpx
import uvicorn

from mcpcore.testing import McpTestClient
from tests.redis_topologies import Topology, redis_topology
from tests.servers import PROCESSES, free_port, run_server

__all__ = ["Cluster", "RoundRobinClient", "cluster", "proxy"]


class Cluster:
    def __init__(self, topology: Topology, urls: list[str], env: dict[str, str]) -> None:
        self.topology = topology
        self.redis_url = topology.url
        self.urls = urls
        self.env = env

    @property
    def redis_proc(self) -> subprocess.Popen[bytes]:
        """The one redis-server of a standalone topology."""
        assert self.topology.mode == "standalone"
        return next(iter(self.topology.procs.values()))

    def xrange(self, key: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """The entries of the stream ``key``, read with a blocking client made for this call (run it
        in a thread; a cluster client that reinitialises its slot map while the cluster settles
        would leave asyncio connections behind for the garbage collector to warn about)."""
        import redis
        import redis.cluster
        import redis.sentinel

        topo = self.topology
        client: Any
        if topo.mode == "cluster":
            client = redis.cluster.RedisCluster.from_url(topo.url)
        elif topo.mode == "sentinel":
            hosts = [(h, int(p)) for h, p in (hp.rsplit(":", 1) for hp in topo.env["MCP_REDIS_SENTINELS"].split(","))]
            client = redis.sentinel.Sentinel(hosts).master_for(topo.env["MCP_REDIS_SENTINEL_MASTER"])
        else:
            client = redis.Redis.from_url(topo.url)
        try:
            return list(client.xrange(key))
        finally:
            client.close()


@contextlib.contextmanager
def cluster(tmp: Path, target: str = "examples.everything:app", n: int = 3,
            extra_env: dict[str, str] | None = None, topology: str = "standalone") -> Iterator[Cluster]:
    """``n`` instances of ``target`` on free ports sharing a private Redis ``topology``
    (``standalone``, ``cluster`` or ``sentinel``)."""
    sandbox = tmp / "sandbox"
    sandbox.mkdir(exist_ok=True)
    with redis_topology(topology, tmp / "redis") as topo:
        env = {"MCP_SESSION_STORE": "redis", "STORAGE_PROVIDER_TYPE": "redis", **topo.env,
               "MCP_REQUEST_STATE_KEY": secrets.token_hex(32), "MCP_STORAGE_CURSOR_KEY": secrets.token_hex(32),
               "MCP_EXAMPLE_SANDBOX": str(sandbox), "MCP_LOG_LEVEL": "info", **(extra_env or {})}
        with contextlib.ExitStack() as stack:
            urls = [stack.enter_context(run_server(target, env=env)) for _ in range(n)]
            yield Cluster(topo, urls, env)


class RoundRobinClient(McpTestClient):
    """Sends each HTTP request to the next instance."""

    def __init__(self, urls: list[str], **kw: Any) -> None:
        super().__init__(url=urls[0], **kw)
        self._cycle = itertools.cycle(urls)
        self.sent_to: list[str] = []

    @property  # type: ignore[override]
    def url(self) -> str:
        u = next(self._cycle)
        self.sent_to.append(u)
        return u

    @url.setter
    def url(self, value: str) -> None:
        pass


def _proxy_app(backends: list[str]) -> Any:
    cycle = itertools.cycle(backends)
    # A proxy passes cookies through and keeps none: a jar that refuses every cookie, else one
    # browser's Set-Cookie would ride along on every later request, whoever sends it.
    client = httpx.AsyncClient(timeout=None, cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])))

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await client.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        target = next(cycle) + scope["path"] + ("?" + scope["query_string"].decode() if scope["query_string"] else "")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"content-length", b"connection")]
        req = client.build_request(scope["method"], target, headers=headers, content=body)
        resp = await client.send(req, stream=True)
        await send({"type": "http.response.start", "status": resp.status_code,
                    "headers": [(k, v) for k, v in resp.headers.raw if k.lower() not in (b"transfer-encoding",
                                                                                          b"content-length")]})
        try:
            async with anyio.create_task_group() as tg:
                async def until_the_client_leaves() -> None:  # then the backend's stream is closed too
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    tg.cancel_scope.cancel()

                tg.start_soon(until_the_client_leaves)
                async for chunk in resp.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
                tg.cancel_scope.cancel()
        finally:
            await resp.aclose()

    return app


@contextlib.contextmanager
def proxy(backends: list[str], port: int | None = None) -> Iterator[str]:
    """A per-request round-robin HTTP proxy on ``port`` (default: a free one) in a thread; yields
    its /mcp URL."""
    port = port or free_port()
    bases = [u.rsplit("/mcp", 1)[0] for u in backends]
    server = uvicorn.Server(uvicorn.Config(_proxy_app(bases), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("proxy did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)


def kill(url: str) -> None:
    """SIGKILL the instance serving ``url``."""
    proc = PROCESSES[url]
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)


