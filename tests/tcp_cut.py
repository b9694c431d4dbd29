"""A TCP proxy whose connections the test can cut (test scaffolding, not product).

``cut(seconds)`` closes every connection it carries and, for that long, closes each new one as
soon as it is accepted: to the server behind it, the store is unreachable, as during a network
partition or a restart of the store.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

__all__ = ["CuttableProxy", "cuttable_proxy"]


class CuttableProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._down_until = 0.0
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        self.refused = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self, seconds: float) -> None:
        """Drop every connection now and refuse new ones for ``seconds``."""
        with self._lock:
            self._down_until = time.monotonic() + seconds
            socks, self._open = self._open, set()
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self._closed = True
        self.cut(0)
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if time.monotonic() < self._down_until:
                self.refused += 1
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=2)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._open.update((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open.discard(src)
            src.close()  # each pump closes the socket it reads; the other pump closes the other


@contextlib.contextmanager
def cuttable_proxy(redis_url: str) -> Iterator[tuple[CuttableProxy, str]]:
    """A proxy in front of the Redis at ``redis_url``; yields it and the URL to reach Redis through it."""
    hostport = redis_url.split("//", 1)[1].split("/", 1)[0]
    host, port = hostport.rsplit(":", 1)
    proxy = CuttableProxy((host, int(port)))
    try:
        yield proxy, f"redis://127.0.0.1:{proxy.port}/0"
    finally:
        proxy.close()
