"""The authorization server's keys, all from ``MCP_AUTH_SIGNING_KEY``.

The setting is one or more secrets (comma-separated, each at least 32 characters); the first
signs and seals, every one verifies and opens, so a key is rotated by putting the new one first
and dropping the old one after the longest token lifetime. From each secret, HKDF-SHA256
(``cryptography``) derives, under distinct labels:

- an ES256 (P-256) key that signs the access tokens we issue; the public halves are our JWKS,
  each with its RFC 7638 thumbprint as ``kid``;
- an AES-256-GCM key that seals the upstream provider's tokens before they reach the store;
- an HMAC key for the consent form's CSRF token.

Every instance given the same setting derives the same keys: no key file to distribute.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Sequence
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ... import _json
from ...errors import ConfigurationError
from ..dpop import jwk_thumbprint

__all__ = ["MIN_KEY_LENGTH", "ProxyKeys", "b64url"]

MIN_KEY_LENGTH = 32
_P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def b64url(data: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _derive(secret: bytes, label: str, length: int = 32) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=b"mcpcore-authorization-server",
                info=label.encode()).derive(secret)


class _KeySet:
    __slots__ = ("aead", "csrf", "jwk", "kid", "private")

    def __init__(self, secret: bytes) -> None:
        scalar = int.from_bytes(_derive(secret, "es256", 48), "big") % (_P256_ORDER - 1) + 1
        self.private = ec.derive_private_key(scalar, ec.SECP256R1())
        numbers = self.private.public_key().public_numbers()
        jwk = {"kty": "EC", "crv": "P-256", "x": b64url(numbers.x.to_bytes(32, "big")),
               "y": b64url(numbers.y.to_bytes(32, "big"))}
        self.kid = jwk_thumbprint(jwk)
        self.jwk = {**jwk, "kid": self.kid, "alg": "ES256", "use": "sig"}
        self.aead = AESGCM(_derive(secret, "seal-upstream-tokens"))
        self.csrf = _derive(secret, "consent-csrf")


class ProxyKeys:
    """The signing, sealing and CSRF keys (see the module docstring).

    Raises:
        ConfigurationError: no key, or a key shorter than 32 characters, naming ``MCP_AUTH_SIGNING_KEY``.
    """

    def __init__(self, secrets: Sequence[str]) -> None:
        keys = [s.strip() for s in secrets if s.strip()]
        if not keys:
            raise ConfigurationError("MCP_AUTH_SIGNING_KEY is required when MCP_AUTH_MODE=proxy: one or more "
                                     f"comma-separated secrets of at least {MIN_KEY_LENGTH} characters")
        if any(len(k) < MIN_KEY_LENGTH for k in keys):
            raise ConfigurationError(f"MCP_AUTH_SIGNING_KEY: every comma-separated key must be at least "
                                     f"{MIN_KEY_LENGTH} characters")
        self._sets = [_KeySet(k.encode()) for k in keys]
        self._by_kid = {s.kid: s for s in self._sets}

    @classmethod
    def from_setting(cls, raw: str | None) -> ProxyKeys:
        """From the comma-separated setting."""
        return cls((raw or "").split(","))

    def __repr__(self) -> str:
        return f"ProxyKeys(kids={[s.kid for s in self._sets]})"

    @property
    def jwks(self) -> list[dict[str, Any]]:
        """The public keys, the signing one first."""
        return [dict(s.jwk) for s in self._sets]

    def sign(self, claims: dict[str, Any]) -> str:
        """A compact ES256 JWT of ``claims`` (PyJWT), with the signing key's ``kid``."""
        import jwt

        first = self._sets[0]
        return jwt.encode(claims, first.private, algorithm="ES256", headers={"kid": first.kid, "typ": "at+jwt"})

    def seal(self, value: dict[str, Any], context: str) -> str:
        """``value`` encrypted and authenticated (AES-256-GCM), bound to ``context``."""
        first = self._sets[0]
        nonce = os.urandom(12)
        box = first.aead.encrypt(nonce, _json.dumps(value), context.encode())
        return f"{first.kid}.{b64url(nonce + box)}"

    def open(self, sealed: str, context: str) -> dict[str, Any] | None:
        """What :meth:`seal` sealed with ``context``; ``None`` when it does not open with any key."""
        kid, _, body = sealed.partition(".")
        keys = self._by_kid.get(kid)
        if keys is None:
            return None
        try:
            raw = _unb64(body)
            value = _json.loads(keys.aead.decrypt(raw[:12], raw[12:], context.encode()))
        except Exception:  # tampered, truncated or not ours: all the same refusal
            return None
        return value if isinstance(value, dict) else None

    def csrf(self, *parts: str) -> str:
        """The CSRF token binding ``parts`` (the pending approval and the browser)."""
        return b64url(hmac.new(self._sets[0].csrf, "\x00".join(parts).encode(), hashlib.sha256).digest())

    def csrf_ok(self, token: str, *parts: str) -> bool:
        """Whether ``token`` is :meth:`csrf` of ``parts`` under any key (constant time)."""
        msg = "\x00".join(parts).encode()
        return any(hmac.compare_digest(token, b64url(hmac.new(s.csrf, msg, hashlib.sha256).digest()))
                   for s in self._sets)
