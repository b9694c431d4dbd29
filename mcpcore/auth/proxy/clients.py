"""The clients this authorization server knows, in the order a ``client_id`` is tried:

1. **A client ID metadata document** (CIMD): an ``https`` ``client_id`` with a path is the URL of
   the client's JSON metadata, fetched by :class:`~.fetch.SafeFetcher` (5 s, 16 KiB), cached as
   its ``Cache-Control: max-age`` / ``no-store`` say (at most a day, 5 minutes when silent), and
   validated: its ``client_id`` equals the URL, ``redirect_uris`` is a non-empty list of absolute
   URIs, no shared secret (``client_secret*`` or a ``client_secret_*`` method: anyone can read the
   document), ``private_key_jwt`` only with a ``jwks_uri`` or ``jwks``.
2. **Dynamic registration** (RFC 7591): a ``client_id`` this server handed out, from the store.
3. **Pre-registered** clients from ``OAUTH_PROXY_CLIENTS`` (a JSON array) or code.

Redirect URIs match exactly, except that a loopback ``http`` URI (``127.0.0.1``, ``[::1]``,
``localhost``) matches on any port (RFC 8252 §7.3: native apps listen on an ephemeral port).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ... import _json
from ...errors import ConfigurationError
from .fetch import FetchRefused, SafeFetcher

__all__ = [
    "CimdResolver",
    "Client",
    "ClientError",
    "is_cimd_url",
    "parse_clients",
    "redirect_matches",
    "validate_redirect_uri",
]

CIMD_MAX_BYTES = 16 * 1024
CIMD_DEFAULT_TTL = 300.0
CIMD_MAX_TTL = 86_400.0
CIMD_CACHE_ENTRIES = 1000
_LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
PUBLIC_METHODS = ("none", "private_key_jwt")
SECRET_METHODS = ("client_secret_basic", "client_secret_post")


class ClientError(Exception):
    """A client or its metadata is refused: ``error`` is the OAuth error code, ``str()`` the reason."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error


@dataclass(frozen=True, slots=True)
class Client:
    """A client allowed to ask for authorization."""

    client_id: str
    redirect_uris: tuple[str, ...]
    name: str | None = None
    auth_method: str = "none"
    secret_hash: str | None = field(default=None, repr=False)
    jwks_uri: str | None = None
    jwks: dict[str, Any] | None = field(default=None, repr=False)
    kind: str = "registered"
    """``cimd``, ``registered`` (RFC 7591) or ``configured``."""

    def allows(self, redirect_uri: str) -> bool:
        """Whether ``redirect_uri`` is one of this client's (see the module docstring)."""
        return any(redirect_matches(r, redirect_uri) for r in self.redirect_uris)

    @property
    def display_name(self) -> str:
        """Its name when it gave one, else its ``client_id``."""
        return self.name or self.client_id


def _loopback(parts: Any) -> bool:
    return parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS


def redirect_matches(registered: str, given: str) -> bool:
    """Exact match, or loopback http with any port (RFC 8252 §7.3)."""
    if registered == given:
        return True
    a, b = urlsplit(registered), urlsplit(given)
    if not (_loopback(a) and _loopback(b)):
        return False
    return (a.hostname, a.path, a.query) == (b.hostname, b.path, b.query) and not b.fragment


def validate_redirect_uri(uri: object) -> str:
    """A redirect URI a client may register: absolute, no fragment, no credentials; ``https``, or
    ``http`` on loopback, or a private-use scheme of a native app (``com.example.app:/cb``).

    Raises:
        ClientError: ``invalid_redirect_uri``.
    """
    if not isinstance(uri, str) or len(uri) > 2000:
        raise ClientError("invalid_redirect_uri", "a redirect URI must be a string of at most 2000 characters")
    parts = urlsplit(uri)
    if not parts.scheme or parts.fragment or "#" in uri or parts.username or parts.password:
        raise ClientError("invalid_redirect_uri", f"redirect URI {uri!r} must be absolute, without fragment "
                          "or credentials")
    if parts.scheme == "http" and not _loopback(parts):
        raise ClientError("invalid_redirect_uri", f"redirect URI {uri!r} must use https (http only on loopback)")
    if parts.scheme in ("javascript", "data", "file", "vbscript"):
        raise ClientError("invalid_redirect_uri", f"redirect URI scheme {parts.scheme!r} is not allowed")
    if parts.scheme in ("http", "https") and not parts.hostname:
        raise ClientError("invalid_redirect_uri", f"redirect URI {uri!r} has no host")
    return uri


def is_cimd_url(client_id: str) -> bool:
    """Whether ``client_id`` names a metadata document: https with a path beyond ``/``."""
    parts = urlsplit(client_id)
    return parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/")


def _check_cimd_url(client_id: str) -> None:
    parts = urlsplit(client_id)
    segments = parts.path.split("/")
    if parts.fragment or parts.username or parts.password or "." in segments or ".." in segments:
        raise ClientError("invalid_client", "a client_id URL must have no fragment, credentials or dot segments")


def _max_age(headers: Mapping[str, str]) -> float:
    directives = [d.strip().lower() for d in headers.get("cache-control", "").split(",")]
    if "no-store" in directives or "no-cache" in directives:
        return 0.0
    for d in directives:
        name, _, value = d.partition("=")
        if name == "max-age" and value.isdigit():
            return min(float(value), CIMD_MAX_TTL)
    return CIMD_DEFAULT_TTL


def client_from_document(client_id: str, doc: object) -> Client:
    """The client a metadata document describes.

    Raises:
        ClientError: ``invalid_client`` naming the field.
    """
    if not isinstance(doc, dict):
        raise ClientError("invalid_client", "the client metadata document is not a JSON object")
    if doc.get("client_id") != client_id:
        raise ClientError("invalid_client", "the client metadata document's client_id is not its URL")
    if any(k in doc for k in ("client_secret", "client_secret_expires_at")):
        raise ClientError("invalid_client", "a client metadata document may not carry a client secret")
    method = doc.get("token_endpoint_auth_method", "none")
    if method not in PUBLIC_METHODS:
        raise ClientError("invalid_client", f"token_endpoint_auth_method {method!r} is not allowed for a "
                          "metadata document (use none or private_key_jwt)")
    jwks_uri, jwks = doc.get("jwks_uri"), doc.get("jwks")
    if method == "private_key_jwt" and not ((isinstance(jwks_uri, str) and is_cimd_url(jwks_uri))
                                            or isinstance(jwks, dict)):
        raise ClientError("invalid_client", "private_key_jwt needs an https jwks_uri or jwks")
    uris = doc.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > 20:
        raise ClientError("invalid_client", "redirect_uris must be a list of 1 to 20 URIs")
    try:
        redirect_uris = tuple(validate_redirect_uri(u) for u in uris)
    except ClientError as e:
        raise ClientError("invalid_client", str(e)) from None
    name = doc.get("client_name")
    return Client(client_id, redirect_uris, name=name[:200] if isinstance(name, str) else None, auth_method=method,
                  jwks_uri=jwks_uri if isinstance(jwks_uri, str) else None,
                  jwks=jwks if isinstance(jwks, dict) else None, kind="cimd")


class CimdResolver:
    """Clients from their metadata documents, fetched safely and cached per their headers."""

    def __init__(self, fetcher: SafeFetcher, *, clock: Any = time.monotonic) -> None:
        self.fetcher = fetcher
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, Client]] = OrderedDict()
        self.fetches = 0

    async def resolve(self, client_id: str) -> Client:
        """The client at ``client_id``.

        Raises:
            ClientError: ``invalid_client``: the URL, its fetch or its document is refused.
        """
        cached = self._cache.get(client_id)
        if cached is not None and cached[0] > self._clock():
            self._cache.move_to_end(client_id)
            return cached[1]
        _check_cimd_url(client_id)
        self.fetches += 1
        try:
            fetched = await self.fetcher.get(client_id, max_bytes=CIMD_MAX_BYTES)
        except FetchRefused as e:
            raise ClientError("invalid_client", f"the client metadata document was not fetched: {e}") from None
        if fetched.status != 200:
            raise ClientError("invalid_client", f"the client metadata document answered HTTP {fetched.status}")
        try:
            doc = _json.loads(fetched.body)
        except ValueError:
            raise ClientError("invalid_client", "the client metadata document is not JSON") from None
        client = client_from_document(client_id, doc)
        ttl = _max_age(fetched.headers)
        if ttl > 0:
            self._cache[client_id] = (self._clock() + ttl, client)
            while len(self._cache) > CIMD_CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return client


def parse_clients(raw: str | Sequence[Mapping[str, Any]] | None) -> dict[str, Client]:
    """Pre-registered clients: ``OAUTH_PROXY_CLIENTS`` (a JSON array of objects with
    ``client_id``, ``redirect_uris`` and optionally ``client_name`` and ``client_secret``) or the
    same list from code.

    Raises:
        ConfigurationError: naming ``OAUTH_PROXY_CLIENTS`` and what is wrong.
    """
    if not raw:
        return {}
    import hashlib

    try:
        items = _json.loads(raw) if isinstance(raw, str) else list(raw)
    except ValueError:
        raise ConfigurationError("OAUTH_PROXY_CLIENTS must be a JSON array of client objects") from None
    if not isinstance(items, list):
        raise ConfigurationError("OAUTH_PROXY_CLIENTS must be a JSON array of client objects")
    out: dict[str, Client] = {}
    for item in items:
        cid = item.get("client_id") if isinstance(item, Mapping) else None
        uris = item.get("redirect_uris") if isinstance(item, Mapping) else None
        if not isinstance(cid, str) or not cid or not isinstance(uris, list) or not uris:
            raise ConfigurationError("OAUTH_PROXY_CLIENTS: every client needs a client_id and redirect_uris")
        try:
            checked = tuple(validate_redirect_uri(u) for u in uris)
        except ClientError as e:
            raise ConfigurationError(f"OAUTH_PROXY_CLIENTS: client {cid!r}: {e}") from None
        secret = item.get("client_secret")
        out[cid] = Client(cid, checked, name=item.get("client_name"), kind="configured",
                          auth_method="client_secret_post" if secret else "none",
                          secret_hash=hashlib.sha256(secret.encode()).hexdigest() if secret else None)
    return out
