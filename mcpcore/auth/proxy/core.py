"""What every endpoint of the authorization server shares: its URLs, keys, store, clients and
upstream provider, and the few operations more than one endpoint needs (finding a client,
issuing a code, storing a grant's family, minting tokens)."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from .clients import CimdResolver, Client, ClientError, is_cimd_url
from .keys import ProxyKeys
from .store import ProxyStore
from .upstream import Upstream

__all__ = ["CODE_TTL", "TXN_TTL", "ProxyCore", "digest", "new_id"]

CODE_TTL = 60.0
TXN_TTL = 600.0


def digest(secret: str) -> str:
    """The store key of a secret (a code, a refresh token): its SHA-256."""
    return hashlib.sha256(secret.encode()).hexdigest()


def new_id() -> str:
    """A fresh unguessable id (256 bits)."""
    return secrets.token_urlsafe(32)


@dataclass
class ProxyCore:
    """The authorization server's shared parts (see the module docstring)."""

    issuer: str
    resource: str
    server_name: str
    keys: ProxyKeys
    store: ProxyStore
    upstream: Upstream
    cimd: CimdResolver
    configured: dict[str, Client] = field(default_factory=dict)
    access_ttl: int = 3600
    refresh_ttl: int = 2_592_000
    consent_ttl: int = 2_592_000
    registrations_per_minute: int = 10
    max_registrations: int = 10_000
    scopes: tuple[str, ...] = ()
    """Scopes this server grants (the app's declared scopes, set when it starts serving)."""

    def url(self, path: str) -> str:
        """An absolute URL of ours."""
        return self.issuer + path

    @property
    def secure(self) -> bool:
        """Whether we are served over https (the browser cookie is then ``Secure``)."""
        return self.issuer.startswith("https://")

    async def client(self, client_id: str) -> Client:
        """The client ``client_id`` names (CIMD, then registered, then configured).

        Raises:
            ClientError: ``invalid_client``.
        """
        if len(client_id) > 2000:
            raise ClientError("invalid_client", "client_id is too long")
        if is_cimd_url(client_id):
            return await self.cimd.resolve(client_id)
        found = self.configured.get(client_id)
        if found is not None:
            return found
        record = await self.store.get("client", client_id)
        if record is None:
            raise ClientError("invalid_client", "this client_id is not registered here")
        return Client(client_id, tuple(record["redirect_uris"]), name=record.get("client_name"),
                      auth_method=record["auth_method"], secret_hash=record.get("secret_hash"))

    def grant_scopes(self, requested: str | None) -> tuple[str, ...]:
        """The scopes granted for ``requested``: those of ours it names (unknown ones dropped, as
        RFC 6749 §3.3 lets a server grant less), all of ours when it names none."""
        if not requested:
            return self.scopes
        asked = dict.fromkeys(requested.split())
        return tuple(s for s in asked if s in self.scopes)

    async def issue_code(self, grant: dict[str, Any]) -> str:
        """A one-time authorization code for ``grant`` (valid :data:`CODE_TTL` seconds)."""
        code = new_id()
        await self.store.put("code", digest(code), grant, CODE_TTL)
        return code

    async def mint(self, family: str, grant: dict[str, Any], scopes: tuple[str, ...]) -> dict[str, Any]:
        """A token response for ``family``: a signed access token and a fresh refresh token."""
        now = int(time.time())
        claims: dict[str, Any] = {"iss": self.issuer, "aud": grant["resource"], "sub": grant["sub"],
                                  "client_id": grant["client_id"], "scope": " ".join(scopes), "iat": now,
                                  "exp": now + self.access_ttl, "jti": new_id(), "fam": family}
        if grant.get("tid"):
            claims["tid"] = grant["tid"]
        if grant.get("jkt"):
            claims["cnf"] = {"jkt": grant["jkt"]}
        refresh = new_id()
        await self.store.put("refresh", digest(refresh), {"family": family, "client_id": grant["client_id"],
                                                          "scopes": list(scopes)}, self.refresh_ttl)
        return {"access_token": self.keys.sign(claims), "token_type": "DPoP" if grant.get("jkt") else "Bearer",
                "expires_in": self.access_ttl,
                "refresh_token": refresh, "scope": " ".join(scopes)}

    async def revoke_family(self, family: str) -> None:
        """End a grant: its refresh tokens stop working and its upstream tokens are dropped."""
        await self.store.delete("family", family)
