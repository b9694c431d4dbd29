"""Where :class:`~mcpcore.client.OAuth` keeps what a sign-in earned, per server: the tokens, the
client it registered, the authorization server's revocation endpoint.

A store is three coroutines keyed by the server's URL; :class:`MemoryTokenStore` (the default)
forgets at exit, :class:`FileTokenStore` (the CLI's) keeps one JSON file readable by its owner only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .. import _json

__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore", "TokenStoreLocked", "default_token_path"]


@runtime_checkable
class TokenStore(Protocol):
    """What an OAuth client stores per server URL: a JSON-serialisable record (``tokens``,
    ``client``, ``issuer``, ``token_endpoint``, ``revocation_endpoint``). A store shared between
    processes may also offer ``lock(server)``, an async context manager held around a refresh
    (:meth:`FileTokenStore.lock`)."""

    async def load(self, server: str) -> dict[str, Any] | None:
        """The record of ``server``, or ``None``."""
        ...

    async def save(self, server: str, record: Mapping[str, Any]) -> None:
        """Replace the record of ``server``."""
        ...

    async def clear(self, server: str) -> bool:
        """Forget ``server``; whether there was anything to forget."""
        ...


class TokenStoreLocked(Exception):
    """Another process held the token file's lock too long."""


class MemoryTokenStore:
    """Records in this process only (the default of :class:`~mcpcore.client.OAuth`)."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}

    async def load(self, server: str) -> dict[str, Any] | None:
        """The record of ``server``, or ``None``."""
        record = self.records.get(server)
        return _json.loads(_json.dumps(record)) if record is not None else None

    async def save(self, server: str, record: Mapping[str, Any]) -> None:
        """Replace the record of ``server``."""
        self.records[server] = _json.loads(_json.dumps(dict(record)))

    async def clear(self, server: str) -> bool:
        """Forget ``server``."""
        return self.records.pop(server, None) is not None


def default_token_path() -> Path:
    """``$XDG_CONFIG_HOME/mcpcore/oauth.json`` (``~/.config/mcpcore/oauth.json`` when unset)."""
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "mcpcore" / "oauth.json"


class FileTokenStore:
    """Records in one JSON file (``{"servers": {url: record}}``), by default
    :func:`default_token_path`. The folder is created ``0700`` and the file is written ``0600``
    (a new file replaces the old one atomically); a file found readable by others is narrowed to
    ``0600`` before it is read."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_token_path()
        self._lock = asyncio.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            if self.path.stat().st_mode & 0o077:
                os.chmod(self.path, 0o600)
            data = _json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {"servers": {}}
        except (OSError, ValueError) as exc:
            raise OSError(f"cannot read the token file {self.path}: {exc} (delete it to sign in afresh)") from None
        servers = data.get("servers") if isinstance(data, dict) else None
        return {"servers": servers if isinstance(servers, dict) else {}}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".oauth-", suffix=".json", dir=self.path.parent)  # created 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_json.dumps(data))
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    async def load(self, server: str) -> dict[str, Any] | None:
        """The record of ``server``, or ``None``."""
        async with self._lock:
            record = (await asyncio.to_thread(self._read))["servers"].get(server)
        return dict(record) if isinstance(record, dict) else None

    async def save(self, server: str, record: Mapping[str, Any]) -> None:
        """Replace the record of ``server`` (the other servers' records are kept)."""
        async with self._lock:
            data = await asyncio.to_thread(self._read)
            data["servers"][server] = dict(record)
            await asyncio.to_thread(self._write, data)

    async def clear(self, server: str) -> bool:
        """Forget ``server``."""
        async with self._lock:
            data = await asyncio.to_thread(self._read)
            if data["servers"].pop(server, None) is None:
                return False
            await asyncio.to_thread(self._write, data)
            return True

    @contextlib.asynccontextmanager
    async def lock(self, server: str, *, seconds: float = 30.0) -> AsyncIterator[None]:
        """Hold the file's lock (``oauth.json.lock``, ``flock``) while a token is refreshed, so
        that processes sharing the file refresh one at a time and each reads what the one before
        it kept (where ``fcntl`` is missing, Windows, no lock is taken)."""
        try:
            import fcntl
        except ImportError:
            yield
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + seconds
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TokenStoreLocked(f"another process has held {self.path}.lock for {seconds:g} s") \
                            from None
                    await asyncio.sleep(0.05)
            yield
        finally:
            os.close(fd)  # releases the lock

    async def servers(self) -> list[str]:
        """The servers with a record."""
        async with self._lock:
            return sorted((await asyncio.to_thread(self._read))["servers"])
