"""Storage fixtures: a real Redis (REDIS_URL or a private ``redis-server``) and one provider per kind."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcpcore.storage import CursorSigner, FileStorage, MemoryStorage, StateService, StorageProvider
from mcpcore.storage.redis import RedisStorage

KINDS = ["memory", "filesystem", "redis"]
INSTALL_HINT = ("Redis tests need a redis-server: install it (apt-get install redis-server, "
                "brew install redis) or point REDIS_URL at a server you may write to.")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@asynccontextmanager
async def redis_again(port: str) -> AsyncIterator[subprocess.Popen[bytes]]:
    """``redis-server`` started again on ``port`` (a test stopped the one there), empty, once it
    answers; stopped by PID on exit."""
    proc = subprocess.Popen(["redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if _answers_ping(int(port)):
                break
            await asyncio.sleep(0.05)
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def redis_server(log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A private ``redis-server`` on a free port (no persistence); stopped by PID on exit."""
    exe = shutil.which("redis-server") or ("/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None)
    if exe is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                 "--daemonize", "no"], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while not _answers_ping(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start on port {port}: {log.read_text()[-500:]}\n{INSTALL_HINT}",
                            pytrace=False)
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0", proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def drop_namespace(storage: RedisStorage) -> None:
    """Delete every key of ``storage``'s namespace (safe on a shared server)."""
    client = storage.client
    batch: list[Any] = []
    async for key in client.scan_iter(match="{" + storage.namespace + ":*", count=1000):
        batch.append(key)
        if len(batch) >= 500:
            await client.delete(*batch)
            batch.clear()
    if batch:
        await client.delete(*batch)


ProviderFactory = Callable[[str], StorageProvider]


@pytest.fixture
async def make_provider(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ProviderFactory]:
    """Build fresh providers by kind; all are closed (Redis namespaces dropped) after the test."""
    made: list[StorageProvider] = []

    def make(kind: str) -> StorageProvider:
        p: StorageProvider
        if kind == "memory":
            p = MemoryStorage()
        elif kind == "filesystem":
            p = FileStorage(tmp_path / f"state-{len(made)}")
        elif kind == "redis":
            p = RedisStorage(request.getfixturevalue("redis_url"), namespace=f"test-{uuid.uuid4().hex[:12]}")
        else:
            raise ValueError(kind)
        made.append(p)
        return p

    yield make
    for p in made:
        if isinstance(p, RedisStorage):
            await drop_namespace(p)
        await p.close()


@pytest.fixture(params=KINDS)
def provider(request: pytest.FixtureRequest, make_provider: ProviderFactory) -> StorageProvider:
    """One fresh provider of each kind."""
    return make_provider(request.param)


@pytest.fixture
def signer() -> CursorSigner:
    return CursorSigner([b"test-cursor-key"])


@pytest.fixture
def service(provider: StorageProvider, signer: CursorSigner) -> StateService:
    return StateService(provider, signer)
