"""A separate process racing ``take()``: ``python _take_worker.py <fs root> <redis url> <namespace> <tenant>``.

Prints ``ready <pid>`` once its providers are connected, then for each JSON line
``{"kind": "filesystem"|"redis", "keys": [...]}`` on stdin takes every key in order and prints a
JSON list of what it got (``null`` for nothing). An empty line or EOF ends it.
"""

from __future__ import annotations

import asyncio
import os
import sys

import orjson

from mcpcore.storage import FileStorage, RedisStorage, StorageProvider


async def take_all(provider: StorageProvider, tenant: str, keys: list[str]) -> list[str | None]:
    out: list[str | None] = []
    for key in keys:
        raw = await provider.take(tenant, key)
        out.append(None if raw is None else raw.decode())
    return out


def main() -> None:
    root, url, namespace, tenant = sys.argv[1:5]
    with asyncio.Runner() as runner:
        providers: dict[str, StorageProvider] = {"filesystem": FileStorage(root),
                                                 "redis": RedisStorage(url, namespace=namespace)}
        runner.run(providers["redis"].ping())
        print("ready", os.getpid(), flush=True)
        try:
            for line in sys.stdin:
                if not line.strip():
                    break
                cmd = orjson.loads(line)
                got = runner.run(take_all(providers[cmd["kind"]], tenant, cmd["keys"]))
                sys.stdout.write(orjson.dumps(got).decode() + "\n")
                sys.stdout.flush()
        finally:
            runner.run(providers["redis"].close())


if __name__ == "__main__":
    main()
