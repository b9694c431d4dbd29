"""Fetching a URL a client named (a client ID metadata document, its ``jwks_uri``) without
letting the client point this server at its own network.

- Only ``https`` (plain ``http`` too under the development allowance).
- The host is resolved once; every address it resolves to must be global (not private, loopback,
  link-local, multicast, unspecified, reserved or shared): one bad address refuses the URL. The
  connection goes to the address that was checked (the URL's host is kept for ``Host`` and TLS
  SNI, and the certificate is verified for it), so a second DNS answer cannot swap it.
- A deadline over the whole fetch (a slow drip ends with it) and a byte cap (the body is read in
  chunks and dropped past it; a larger ``Content-Length`` is refused before reading).
- Redirects only to the same scheme, host and port, each re-checked, at most three.

``allow_private`` (``OAUTH_PROXY_CIMD_ALLOW_PRIVATE``) lifts the address and scheme checks for
development and tests; never in production.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

__all__ = ["FetchRefused", "Fetched", "SafeFetcher", "refused_address"]

MAX_REDIRECTS = 3


class FetchRefused(Exception):
    """The URL was not fetched, or its answer not read; ``str()`` says why (safe to show)."""


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched document."""

    url: str
    status: int
    headers: httpx.Headers
    body: bytes


def refused_address(address: str) -> bool:
    """Whether ``address`` is one a client-named URL may not reach (not globally routable)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


class SafeFetcher:
    """GETs client-named URLs within the limits of the module docstring.

    Args:
        allow_private: the development allowance (loopback and private addresses, plain http).
        verify: TLS verification for httpx (a custom ``ssl.SSLContext`` for a private CA).
        timeout: seconds for the whole fetch, redirects included.
    """

    def __init__(self, *, allow_private: bool = False, verify: ssl.SSLContext | bool = True,
                 timeout: float = 5.0) -> None:
        self.allow_private = allow_private
        self.timeout = timeout
        self._client = httpx.AsyncClient(verify=verify, follow_redirects=False, trust_env=False,
                                         timeout=httpx.Timeout(timeout))

    async def close(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def _address(self, host: str, port: int) -> str:
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            raise FetchRefused(f"the host {host!r} does not resolve") from None
        addresses = [str(info[4][0]) for info in infos]
        if not addresses:
            raise FetchRefused(f"the host {host!r} does not resolve")
        if not self.allow_private:
            bad = [a for a in addresses if refused_address(a)]
            if bad:
                raise FetchRefused(f"the host {host!r} resolves to a non-public address ({bad[0]})")
        return addresses[0]

    async def get(self, url: str, *, max_bytes: int, accept: str = "application/json") -> Fetched:
        """The document at ``url``.

        Raises:
            FetchRefused: a refused URL, address or redirect, a timeout, a body over ``max_bytes``,
                or a connection failure.
        """
        try:
            with anyio.fail_after(self.timeout):
                return await self._get(url, max_bytes, accept)
        except TimeoutError:
            raise FetchRefused(f"no complete answer within {self.timeout:g} s") from None
        except httpx.HTTPError as e:
            raise FetchRefused(f"the fetch failed ({type(e).__name__})") from None

    async def _get(self, url: str, max_bytes: int, accept: str) -> Fetched:
        first = urlsplit(url)
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            parts = urlsplit(current)
            schemes = ("https", "http") if self.allow_private else ("https",)
            if parts.scheme not in schemes or not parts.hostname or parts.username or parts.password:
                raise FetchRefused("only https URLs without credentials are fetched")
            if (parts.scheme, parts.hostname, parts.port) != (first.scheme, first.hostname, first.port):
                raise FetchRefused("a redirect to another host is not followed")
            host = parts.hostname
            port = parts.port or (443 if parts.scheme == "https" else 80)
            address = await self._address(host, port)
            target = httpx.URL(current).copy_with(host=address)
            request = self._client.build_request(
                "GET", target, headers={"host": parts.netloc.rpartition("@")[2], "accept": accept,
                                 "accept-encoding": "identity"},
                extensions={"sni_hostname": host})
            response = await self._client.send(request, stream=True)
            try:
                if response.status_code in (301, 302, 303, 307, 308):
                    location = response.headers.get("location")
                    if not location:
                        raise FetchRefused("a redirect without a Location")
                    current = urljoin(current, location)
                    continue
                declared = response.headers.get("content-length")
                if declared is not None and declared.isdigit() and int(declared) > max_bytes:
                    raise FetchRefused(f"the document is larger than {max_bytes} bytes")
                body = bytearray()
                async for chunk in response.aiter_raw():
                    body += chunk
                    if len(body) > max_bytes:
                        raise FetchRefused(f"the document is larger than {max_bytes} bytes")
                return Fetched(current, response.status_code, response.headers, bytes(body))
            finally:
                await response.aclose()
        raise FetchRefused(f"more than {MAX_REDIRECTS} redirects")
