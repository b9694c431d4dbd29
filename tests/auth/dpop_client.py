"""The client side of DPoP for the tests, made with joserfc (a maintained JOSE library): a key
pair, proofs for a request (RFC 9449 §4.2), and an ``httpx.Auth`` that sends a fresh proof with
every request and retries once with the server's nonce when asked (§9)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import warnings
from collections.abc import Generator
from typing import Any

import httpx
from joserfc import jwt as jose_jwt
from joserfc.errors import SecurityWarning
from joserfc.jwk import ECKey, OKPKey, RSAKey

ALG_OF = {"EC": "ES256", "RSA": "PS256", "OKP": "EdDSA"}


class DPoPKey:
    """A client's proof key: ``ES256`` (default), ``PS256`` (``"RSA"``) or ``EdDSA`` (``"OKP"``)."""

    def __init__(self, kind: str = "EC") -> None:
        if kind == "EC":
            self.key: Any = ECKey.generate_key("P-256")
        elif kind == "RSA":
            self.key = RSAKey.generate_key(2048)
        else:
            self.key = OKPKey.generate_key("Ed25519")
        self.alg = ALG_OF[kind]

    @property
    def jkt(self) -> str:
        """The RFC 7638 thumbprint joserfc computes (what a token's ``cnf.jkt`` names)."""
        return str(self.key.thumbprint())

    def proof(self, htm: str, htu: str, token: str | None = None, *, iat: float | None = None, jti: str | None = None,
              nonce: str | None = None, typ: str = "dpop+jwt", jwk: dict[str, Any] | None = None,
              **extra: Any) -> str:
        """A proof for ``htm htu`` (``ath`` of ``token`` when given); the keywords make bad ones."""
        claims: dict[str, Any] = {"jti": jti or secrets.token_urlsafe(16), "htm": htm, "htu": htu,
                                  "iat": int(time.time() if iat is None else iat), **extra}
        if token is not None:
            claims.setdefault("ath", base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(
                b"=").decode())
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": typ, "alg": self.alg, "jwk": jwk if jwk is not None else self.key.as_dict(private=False)}
        with warnings.catch_warnings():  # joserfc flags EdDSA as superseded by RFC 9864's Ed25519 (PyJWT lacks it)
            warnings.simplefilter("ignore", SecurityWarning)
            return str(jose_jwt.encode(header, claims, self.key, algorithms=[self.alg]))


class DPoPAuth(httpx.Auth):
    """``Authorization: DPoP <token>`` and a fresh proof on every request."""

    def __init__(self, key: DPoPKey, token: str) -> None:
        self.key = key
        self.token = token
        self.nonce: str | None = None
        self.proofs: list[str] = []

    def _sign(self, request: httpx.Request) -> None:
        htu = str(request.url.copy_with(query=None, fragment=None))
        proof = self.key.proof(request.method, htu, self.token, nonce=self.nonce)
        self.proofs.append(proof)
        request.headers["authorization"] = f"DPoP {self.token}"
        request.headers["dpop"] = proof

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self._sign(request)
        response = yield request
        nonce = response.headers.get("dpop-nonce")
        if nonce is not None:
            self.nonce = nonce
            if response.status_code == 401 and "use_dpop_nonce" in response.headers.get("www-authenticate", ""):
                self._sign(request)
                yield request
