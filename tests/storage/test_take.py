"""``take()`` hands a value to exactly one of 20 concurrent callers: tasks on every provider, and
20 separate processes on the filesystem and Redis providers."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import orjson
import pytest

from mcpcore.storage import FileStorage, RedisStorage, StorageProvider

from .conftest import drop_namespace

CALLERS = 20
ROUNDS = 4
KEYS_PER_ROUND = 5
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.anyio
async def test_twenty_concurrent_tasks_take_once(provider: StorageProvider) -> None:

    async def taker(go: anyio.Event, keys: list[str], got: list[bytes | None]) -> None:
        await go.wait()
        for k in keys:
            got.append(await provider.take("t", k))

    for round_ in range(ROUNDS):
        keys = [f"once/{round_}/{i}" for i in range(KEYS_PER_ROUND)]
        await provider.set_many("t", {k: k.encode() for k in keys})
        got: list[bytes | None] = []
        go = anyio.Event()
        async with anyio.create_task_group() as tg:
            for _ in range(CALLERS):
                tg.start_soon(taker, go, keys, got)
            go.set()
        assert len(got) == CALLERS * KEYS_PER_ROUND
        assert sorted(v for v in got if v is not None) == sorted(k.encode() for k in keys)
        assert await provider.get_many("t", keys) == {}


class Workers:
    """Twenty worker processes, each blocked on stdin until a command arrives."""

    def __init__(self, root: Path, redis_url: str, namespace: str, tenant: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        script = str(Path(__file__).with_name("_take_worker.py"))
        self.procs = [subprocess.Popen([sys.executable, script, str(root), redis_url, namespace, tenant],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
                      for _ in range(CALLERS)]
        self.pids = set()
        for p in self.procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            assert line.startswith("ready "), f"worker failed to start (exit {p.poll()})"
            self.pids.add(int(line.split()[1]))

    def take(self, kind: str, keys: list[str]) -> list[list[str | None]]:
        """Send the same command to every worker at once; each worker's results."""
        cmd = orjson.dumps({"kind": kind, "keys": keys}).decode() + "\n"
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.write(cmd)
            p.stdin.flush()
        out = []
        for p in self.procs:
            assert p.stdout is not None
            out.append(orjson.loads(p.stdout.readline()))
        return out

    def stop(self) -> None:
        for p in self.procs:
            try:
                assert p.stdin is not None
                p.stdin.write("\n")
                p.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[tuple[Workers, Path, str]]:
    root = tmp_path_factory.mktemp("take-fs")
    namespace = f"take-{uuid.uuid4().hex[:10]}"
    pool = Workers(root, redis_url, namespace, "tenant")
    try:
        yield pool, root, namespace
    finally:
        pool.stop()


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["filesystem", "redis"])
async def test_twenty_processes_take_once(workers: tuple[Workers, Path, str], redis_url: str, kind: str) -> None:
    pool, root, namespace = workers
    assert len(pool.pids) == CALLERS and os.getpid() not in pool.pids
    provider: StorageProvider = FileStorage(root) if kind == "filesystem" else RedisStorage(redis_url,
                                                                                           namespace=namespace)
    try:
        for round_ in range(ROUNDS):
            keys = [f"consent/{round_}/{i}" for i in range(KEYS_PER_ROUND)]
            await provider.set_many("tenant", {k: f"value-{k}".encode() for k in keys})
            results = await anyio.to_thread.run_sync(pool.take, kind, keys)
            for i, key in enumerate(keys):
                winners = [r[i] for r in results if r[i] is not None]
                assert winners == [f"value-{key}"], (key, winners)
            assert await provider.get_many("tenant", keys) == {}
    finally:
        if isinstance(provider, RedisStorage):
            await drop_namespace(provider)
        await provider.close()
