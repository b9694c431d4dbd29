"""Filesystem storage: one file per key under a per-tenant folder, atomic writes, a rename-based ``take``.

Layout under ``root``::

    <root>/t.<tenant>/                     one folder per tenant (odd tenant names are hashed: x.<sha256>)
        item.d/123.v                       key "item/123": a folder per "/" segment, a ".v" file per value
        <96 chars>.c/...                   segments of 96+ characters continue in ".c" chunk folders

Every name is encoded (uppercase ``A`` becomes ``^a`` so case-insensitive filesystems cannot merge
two keys) and carries a type suffix (``.v`` value, ``.d`` segment folder, ``.c`` chunk folder), so
no key can escape the root or collide with an internal file (``*.tmp`` writes in flight, ``*.claim``
takes in flight). Walking folders in the order of the key range each entry covers yields keys in
exact lexicographic order, which is what ``list`` pages over.

A value file is a 12-byte header (magic, expiry as wall-clock epoch seconds or 0) and the value.
Writes go to a temp file in the same folder and are moved in place with ``os.replace``; ``take`` and
``delete`` first rename the file to a unique claim name, so of any number of callers, in any number
of processes, exactly one wins. Expired files are removed lazily by whoever reads them; temp and
claim files orphaned by a crashed process are swept by ``list`` once they are an hour old.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import anyio.to_thread

from ..errors import JsonRpcErrorCode, McpError
from .base import ListPage
from .filelayout import HEADER, MAGIC, beyond, entry_of, key_path, parse_value, tenant_dir

__all__ = ["FileStorage"]

R = TypeVar("R")

_ATTEMPTS = 16
_STALE_SECONDS = 3600.0


class FileStorage:
    """A :class:`~mcpcore.storage.base.StorageProvider` on a local (or shared POSIX) filesystem.

    Safe for any number of processes sharing ``path``: writes are atomic replacements, ``take`` and
    ``delete`` are rename-based claims, and expiry is stored in each file (wall-clock time, so keep
    the clocks of processes on different hosts in sync). Blocking I/O runs in a worker thread, one
    hop per call.

    Args:
        path: the root folder; created on first write.
        fsync: flush each written file to disk before it replaces the old one (durable across power
            loss, several times slower).
        clock: wall-clock seconds since the epoch; for tests.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        self.root = os.path.abspath(os.fspath(path))
        self.fsync = fsync
        self._now = clock

    def __repr__(self) -> str:
        return f"FileStorage({self.root!r})"

    # -- plumbing -------------------------------------------------------------------------------

    async def _run(self, fn: Callable[..., R], *args: Any) -> R:
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except McpError:
            raise
        except OSError as exc:
            raise McpError(JsonRpcErrorCode.ServiceUnavailable,
                           f"Filesystem storage failed: {exc.strerror or type(exc).__name__}.",
                           {"reason": "storage_unavailable"}, cause=exc) from exc

    def _tdir(self, tenant: str) -> str:
        return os.path.join(self.root, tenant_dir(tenant))

    def _path(self, tenant: str, key: str) -> str:
        folders, name = key_path(key)
        return os.path.join(self.root, tenant_dir(tenant), *folders, name)

    def _live(self, expires: float, now: float | None = None) -> bool:
        return expires == 0.0 or expires > (self._now() if now is None else now)

    def _prune(self, folder: str) -> None:
        """Remove now-empty folders from ``folder`` up to (and including) the tenant folder."""
        while len(folder) > len(self.root) and folder.startswith(self.root):
            try:
                os.rmdir(folder)
            except OSError:
                return
            folder = os.path.dirname(folder)

    def _read(self, path: str, now: float | None = None) -> bytes | None:
        """The live value at ``path``; an expired file is removed (unless it was replaced meanwhile)."""
        try:
            f = open(path, "rb")  # noqa: SIM115 - the descriptor must stay open while dropping
        except (FileNotFoundError, NotADirectoryError):
            return None
        with f:
            parsed = parse_value(f.read())
            if parsed is None:
                return None
            expires, value = parsed
            if self._live(expires, now):
                return value
            self._drop_expired(path, os.fstat(f.fileno()))
            return None

    def _drop_expired(self, path: str, seen: os.stat_result) -> None:
        claim = f"{path}.{secrets.token_hex(6)}.claim"
        try:
            os.rename(path, claim)
        except (FileNotFoundError, NotADirectoryError):
            return
        try:
            st = os.stat(claim)
            if (st.st_ino, st.st_dev) != (seen.st_ino, seen.st_dev):
                # A writer replaced the expired file after we read it: put the new one back,
                # unless an even newer one is already there.
                try:
                    os.link(claim, path)
                except FileExistsError:
                    pass
                except OSError:
                    os.replace(claim, path)
                    return
        finally:
            try:
                os.unlink(claim)
            except FileNotFoundError:
                pass
        self._prune(os.path.dirname(path))

    def _write(self, path: str, blob: bytes) -> None:
        folder = os.path.dirname(path)
        for _ in range(_ATTEMPTS):
            tmp = f"{path}.{secrets.token_hex(6)}.tmp"
            try:
                f = open(tmp, "xb", opener=_private)  # noqa: SIM115
            except FileNotFoundError:
                try:
                    os.makedirs(folder, mode=0o700, exist_ok=True)
                except FileNotFoundError:
                    pass  # a concurrent prune removed a parent; try again
                continue
            try:
                with f:
                    f.write(blob)
                    if self.fsync:
                        f.flush()
                        os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            return
        raise McpError(JsonRpcErrorCode.ServiceUnavailable,
                       "Filesystem storage could not create its folder (it keeps disappearing).",
                       {"reason": "storage_unavailable"})

    def _claim(self, path: str, whole: bool) -> bytes | None:
        """Rename ``path`` to a unique claim name; the one caller whose rename succeeds reads
        (the whole file, or just its header) and deletes it. ``None`` if absent or expired."""
        claim = f"{path}.{secrets.token_hex(6)}.claim"
        try:
            os.rename(path, claim)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            with open(claim, "rb") as f:
                data = f.read() if whole else f.read(HEADER.size)
        finally:
            os.unlink(claim)
            self._prune(os.path.dirname(path))
        parsed = parse_value(data)
        if parsed is None or not self._live(parsed[0]):
            return None
        return parsed[1]

    def _sweep(self, path: str) -> None:
        """Remove a temp or claim file left behind by a process that died mid-write or mid-take."""
        try:
            if os.stat(path).st_mtime < time.time() - _STALE_SECONDS:
                os.unlink(path)
        except OSError:
            pass

    def _blob(self, value: bytes, ttl: float | None) -> bytes:
        return HEADER.pack(MAGIC, 0.0 if ttl is None else self._now() + ttl) + value

    # -- sync implementations -------------------------------------------------------------------

    def _get_many(self, tenant: str, keys: Sequence[str]) -> dict[str, bytes]:
        now = self._now()
        out: dict[str, bytes] = {}
        for k in keys:
            v = self._read(self._path(tenant, k), now)
            if v is not None:
                out[k] = v
        return out

    def _set_many(self, tenant: str, items: Mapping[str, bytes], ttl: float | None) -> None:
        for k, v in items.items():
            self._write(self._path(tenant, k), self._blob(v, ttl))

    def _delete_many(self, tenant: str, keys: Sequence[str]) -> int:
        return sum(1 for k in dict.fromkeys(keys) if self._claim(self._path(tenant, k), False) is not None)

    def _walk(self, tenant: str, prefix: str, after: str | None) -> Iterator[tuple[str, str]]:
        """``(key, file path)`` of every value file with ``prefix`` and after ``after``, in key order."""
        stack: list[tuple[str, str, Iterator[tuple[str, bool, str]]]] = []

        def push(folder: str, start: str) -> None:
            try:
                with os.scandir(folder) as it:
                    names = [e.name for e in it]
            except (FileNotFoundError, NotADirectoryError):
                return
            entries = []
            for name in names:
                parsed = entry_of(name)
                if parsed is not None:
                    entries.append((start + parsed[0], parsed[1], name))
                elif name.endswith((".tmp", ".claim")):
                    self._sweep(os.path.join(folder, name))
            entries.sort()
            stack.append((folder, start, iter(entries)))

        push(self._tdir(tenant), "")
        while stack:
            folder, _, it = stack[-1]
            for start, is_folder, name in it:
                if beyond(start, prefix):
                    return
                if is_folder:
                    if not (start.startswith(prefix) or prefix.startswith(start)):
                        continue
                    if after is not None and start <= after and not after.startswith(start):
                        continue
                    push(os.path.join(folder, name), start)
                    break
                if start.startswith(prefix) and (after is None or start > after):
                    yield start, os.path.join(folder, name)
            else:
                stack.pop()

    def _list(self, tenant: str, prefix: str, after: str | None, limit: int) -> ListPage:
        now = self._now()
        items: list[tuple[str, bytes]] = []
        for key, path in self._walk(tenant, prefix, after):
            value = self._read(path, now)
            if value is None:
                continue
            if len(items) == limit:
                return items, True
            items.append((key, value))
        return items, False

    def _clear(self, tenant: str) -> int:
        trash = os.path.join(self.root, f".clear-{secrets.token_hex(8)}")
        try:
            os.rename(self._tdir(tenant), trash)
        except FileNotFoundError:
            return 0
        now = self._now()
        count = 0
        for folder, _, files in os.walk(trash):
            for name in files:
                if not name.endswith(".v"):
                    continue
                try:
                    with open(os.path.join(folder, name), "rb") as f:
                        parsed = parse_value(f.read(HEADER.size))
                except OSError:
                    continue
                if parsed is not None and self._live(parsed[0], now):
                    count += 1
        shutil.rmtree(trash, ignore_errors=True)
        return count

    def _ping(self) -> None:
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied", self.root)

    # -- StorageProvider ------------------------------------------------------------------------

    async def get(self, tenant: str, key: str) -> bytes | None:
        """The live value of ``key`` or ``None``."""
        return await self._run(self._read, self._path(tenant, key))

    async def set(self, tenant: str, key: str, value: bytes, ttl: float | None = None) -> None:
        """Atomically replace the value of ``key``; ``ttl`` in seconds."""
        await self._run(self._write, self._path(tenant, key), self._blob(value, ttl))

    async def delete(self, tenant: str, key: str) -> bool:
        """Delete ``key``; ``True`` if a live value was deleted."""
        return await self._run(self._claim, self._path(tenant, key), False) is not None

    async def take(self, tenant: str, key: str) -> bytes | None:
        """Atomically read and delete ``key``: exactly one concurrent caller, across processes, gets it."""
        return await self._run(self._claim, self._path(tenant, key), True)

    async def get_many(self, tenant: str, keys: Sequence[str]) -> dict[str, bytes]:
        """The live values of ``keys`` that exist."""
        return await self._run(self._get_many, tenant, keys)

    async def set_many(self, tenant: str, items: Mapping[str, bytes], ttl: float | None = None) -> None:
        """Write each item atomically (the batch as a whole is not atomic across processes)."""
        await self._run(self._set_many, tenant, items, ttl)

    async def delete_many(self, tenant: str, keys: Sequence[str]) -> int:
        """Delete ``keys``; the number of live values deleted."""
        return await self._run(self._delete_many, tenant, keys)

    async def list(self, tenant: str, prefix: str, after: str | None, limit: int) -> ListPage:
        """Up to ``limit`` live ``(key, value)`` pairs under ``prefix`` after ``after``, in key order."""
        return await self._run(self._list, tenant, prefix, after, limit)

    async def clear(self, tenant: str) -> int:
        """Delete every key of ``tenant``; the number of live values deleted."""
        return await self._run(self._clear, tenant)

    async def ping(self) -> None:
        """Check that the root folder exists (creating it) and is writable."""
        await self._run(self._ping)

    async def close(self) -> None:
        """Nothing to release."""
        return None


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)
