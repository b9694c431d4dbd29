"""Request checks before any JSON is read: Host/Origin (DNS rebinding), media types, body size."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from ..asgi_types import Receive, Scope
from ..errors import quoted

__all__ = ["BodyTooLarge", "OriginGuard", "accepts", "is_loopback", "read_body", "valid_host"]

_HOST_RE = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.\-_]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?")


def is_loopback(host: str) -> bool:
    """Whether a host name (no port; IPv6 with or without brackets) is this machine's loopback:
    ``localhost`` or any address of 127.0.0.0/8 or ::1."""
    h = host.strip().lower().strip("[]")
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def valid_host(host: str) -> bool:
    """Whether a ``Host`` header has the form ``name[:port]`` or ``[v6][:port]`` (safe to put in a URL)."""
    return len(host) <= 300 and _HOST_RE.fullmatch(host) is not None


def _str(value: str | bytes | None) -> str | None:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _hostname(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


_UNSEEN = object()


class OriginGuard:
    """Refuses requests whose ``Origin`` is not allowed, and (for a server bound to loopback, or
    when ``MCP_ALLOWED_HOSTS`` is set) whose ``Host`` is not allowed.

    Loopback origins and hosts are always allowed; ``MCP_ALLOWED_ORIGINS=*`` turns the origin
    check off. A server on a public interface behind a proxy is not refused for its public Host.
    """

    def __init__(self, allowed_origins: Sequence[str], allowed_hosts: Sequence[str]) -> None:
        self.any_origin = "*" in allowed_origins
        self.origins = {o.rstrip("/").lower() for o in allowed_origins if o != "*"}
        self.hosts = {_hostname(h) for h in allowed_hosts if h != "*"}
        self.any_host = "*" in allowed_hosts
        self._cache: dict[tuple[Any, str | bytes | None, str | bytes | None], str | None] = {}

    def check(self, scope: Scope, host: str | bytes | None, origin: str | bytes | None) -> str | None:
        """``None`` when allowed, else a reason (remembered per server, Host and Origin, which
        may be given raw, as bytes)."""
        server = scope.get("server")
        key = (server[0] if server else None, host, origin)
        cache = self._cache
        reason = cache.get(key, _UNSEEN)
        if reason is not _UNSEEN:
            return reason  # type: ignore[return-value]
        reason = self._check(scope, _str(host), _str(origin))
        if len(cache) > 1024:
            cache.clear()
        cache[key] = reason
        return reason

    def _check(self, scope: Scope, host: str | None, origin: str | None) -> str | None:
        if origin is not None and not self.any_origin:
            o = origin.rstrip("/").lower()
            if o not in self.origins:
                try:
                    parts = urlsplit(o)
                    oh = (parts.hostname or "").lower()
                except ValueError:
                    return "invalid Origin header"
                if not is_loopback(oh):
                    return f"Origin {quoted(origin)!r} is not allowed"
        if self.any_host:
            return None
        server = scope.get("server")
        bound_loopback = server is not None and is_loopback(str(server[0]))
        if not (self.hosts or bound_loopback):
            return None if host is None or valid_host(host) else "malformed Host header"
        if host is None:
            return "missing Host header"
        h = _hostname(host)
        if (is_loopback(h) or h in self.hosts) and valid_host(host):
            return None
        return f"Host {quoted(host)!r} is not allowed"


_ACCEPT_CACHE: dict[tuple[str | bytes, tuple[str, ...]], bool] = {}


def accepts(accept: str | bytes | None, *types: str) -> bool:
    """Whether an ``Accept`` header (text or raw bytes) admits every one of ``types``
    (wildcards honoured)."""
    if accept is None:
        return False
    key = (accept, types)
    hit = _ACCEPT_CACHE.get(key)
    if hit is not None:
        return hit
    result = _accepts(_str(accept) or "", types)
    if len(_ACCEPT_CACHE) > 512:
        _ACCEPT_CACHE.clear()
    _ACCEPT_CACHE[key] = result
    return result


def _accepts(accept: str, types: tuple[str, ...]) -> bool:
    ranges = []
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media:
            ranges.append(media)
    for t in types:
        major = t.split("/")[0]
        if not any(r in (t, "*/*", f"{major}/*") for r in ranges):
            return False
    return True


class BodyTooLarge(Exception):
    pass


async def read_body(receive: Receive, limit: int,
                    content_length: str | bytes | None) -> bytes | None:
    """The request body, counted as it streams; ``None`` when the client disconnected.

    Raises:
        BodyTooLarge: over ``limit`` bytes (by ``Content-Length`` or by what arrived).
    """
    if limit and content_length is not None:
        try:
            if int(content_length) > limit:
                raise BodyTooLarge
        except ValueError:
            pass
    message = await receive()
    if message["type"] == "http.disconnect":
        return None
    if not message.get("more_body", False):
        body: bytes = message.get("body", b"")
        if limit and len(body) > limit:
            raise BodyTooLarge
        return body
    chunks: list[bytes] = [message.get("body", b"")]
    size = len(chunks[0])
    if limit and size > limit:
        raise BodyTooLarge
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if limit and size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
