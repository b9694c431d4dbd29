"""ctx.state provider throughput: calls per second of get, set, get_many(100), set_many(100) and
list(limit=100) on the memory, filesystem (temp dir) and Redis providers, one caller at a time.

    .venv/bin/python benchmarks/storage_bench.py [--seconds 0.3] [--keys 1000]

Redis: REDIS_URL when set (keys go to a throwaway namespace that is deleted afterwards), else a
private ``redis-server`` started on a free port and stopped at the end. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcpcore.storage import FileStorage, MemoryStorage, StorageProvider
from mcpcore.storage.redis import RedisStorage

TENANT = "bench"
VALUE = b'{"name":"Widget","count":42,"tags":["a","b","c"],"note":"' + b"x" * 40 + b'"}'
OPS = ["get", "set", "get_many(100)", "set_many(100)", "list(100)"]


@contextmanager
def redis_server() -> Iterator[str]:
    url = os.environ.get("REDIS_URL", "").strip()
    if url:
        yield url
        return
    exe = shutil.which("redis-server")
    if exe is None:
        raise SystemExit("redis-server not found: apt-get install redis-server, or set REDIS_URL")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("redis-server did not start")
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(5)


async def rate(fn: Callable[[int], Awaitable[object]], seconds: float) -> float:
    """Calls per second of ``fn(i)`` run back to back for about ``seconds``."""
    for i in range(5):  # warm up
        await fn(i)
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(10):
            await fn(n)
            n += 1
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


async def bench(provider: StorageProvider, keys: int, seconds: float) -> dict[str, float]:
    names = [f"bench/{i:06d}" for i in range(keys)]
    await provider.set_many(TENANT, dict.fromkeys(names, VALUE))

    def batch(i: int) -> list[str]:
        start = (i * 100) % (keys - 100)
        return names[start:start + 100]

    async def get(i: int) -> object:
        return await provider.get(TENANT, names[i % keys])

    async def set_(i: int) -> object:
        await provider.set(TENANT, names[i % keys], VALUE)
        return None

    async def get_many(i: int) -> object:
        return await provider.get_many(TENANT, batch(i))

    async def set_many(i: int) -> object:
        await provider.set_many(TENANT, dict.fromkeys(batch(i), VALUE))
        return None

    async def list_(i: int) -> object:
        after = names[(i * 97) % (keys - 100)]
        items, more = await provider.list(TENANT, "bench/", after, 100)
        assert len(items) == 100 and more is not None
        return items

    out: dict[str, float] = {}
    for name, fn in zip(OPS, [get, set_, get_many, set_many, list_], strict=True):
        out[name] = await rate(fn, seconds)
    await provider.clear(TENANT)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=0.3, help="time per operation and provider")
    parser.add_argument("--keys", type=int, default=1000, help="keys preloaded per provider (>= 200)")
    args = parser.parse_args()
    keys = max(200, args.keys)
    results: dict[str, dict[str, float]] = {}
    started = time.perf_counter()
    results["memory"] = await bench(MemoryStorage(max_entries=keys * 2), keys, args.seconds)
    with tempfile.TemporaryDirectory(prefix="mcpcore-bench-") as tmp:
        results["filesystem"] = await bench(FileStorage(tmp), keys, args.seconds)
    with redis_server() as url:
        redis = RedisStorage(url, namespace=f"bench-{uuid.uuid4().hex[:8]}")
        try:
            results["redis"] = await bench(redis, keys, args.seconds)
        finally:
            await redis.close()

    print(f"ctx.state providers, calls/s, one caller, {keys} keys preloaded, ~{len(VALUE)}-byte values "
          f"({platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{time.perf_counter() - started:.1f} s)\n")
    print("| provider | " + " | ".join(OPS) + " |")
    print("|---|" + "---:|" * len(OPS))
    for provider, row in results.items():
        print(f"| {provider} | " + " | ".join(f"{row[op]:,.0f}" for op in OPS) + " |")


if __name__ == "__main__":
    asyncio.run(main())
