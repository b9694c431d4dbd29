"""DPoP proofs (RFC 9449) as a resource server checks them: one request's proof, on its own.

:class:`ProofChecker` runs the checks of RFC 9449 §4.3 that need nothing but the proof and the
request: one ``DPoP`` header holding one JWT; ``typ`` ``dpop+jwt``; ``alg`` from the allow-list
(asymmetric only); a public ``jwk`` in the header of the type the algorithm needs (a private
member is refused); the signature, verified by PyJWT with that key; ``jti``; ``htm`` equal to
the request's method; ``htu`` equal to the request's URL (``MCP_PUBLIC_URL`` + path when set)
after RFC 3986 normalisation, query and fragment ignored; ``iat`` within the window either side
of now; ``ath`` the SHA-256 of the access token; the server's nonce when it asks for one. What
comes back is the key's RFC 7638 thumbprint, which the token's ``cnf.jkt`` must equal, and the
key under which the proof's ``jti`` is remembered (:mod:`.dpop_guard` does both).

Every refusal is 401 ``invalid_dpop_proof`` with a fixed description (never the library's
text), or ``use_dpop_nonce`` with a fresh nonce.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jwt
from jwt import PyJWK

from .. import _json
from ..asgi_types import Scope
from .errors import AuthError

__all__ = ["DEFAULT_ALGS", "MAX_PROOF_BYTES", "CheckedProof", "ProofChecker", "access_token_hash", "jwk_thumbprint",
           "normalize_url", "request_url"]

DEFAULT_ALGS = ("ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512", "EdDSA")
"""The asymmetric JWS algorithms a proof may use unless ``MCP_AUTH_DPOP_ALGS`` narrows them."""
MAX_PROOF_BYTES = 8 * 1024
_KTY = {"ES": "EC", "PS": "RSA", "RS": "RSA", "Ed": "OKP"}
_CURVES = {"ES256": ("P-256",), "ES384": ("P-384",), "ES512": ("P-521",), "EdDSA": ("Ed25519", "Ed448")}
_PRIVATE = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")
_THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwk_thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public ``EC``, ``RSA`` or ``OKP`` key, base64url.

    Raises:
        ValueError: another key type, or a required member that is missing or not a string.
    """
    kty = jwk.get("kty")
    members = _THUMBPRINT_MEMBERS.get(kty) if isinstance(kty, str) else None
    if members is None:
        raise ValueError("unsupported key type")
    canonical: dict[str, str] = {}
    for name in members:  # already in lexicographic order, as RFC 7638 §3.3 orders them
        value = jwk.get(name)
        if not isinstance(value, str):
            raise ValueError(f"key member {name} is missing")
        canonical[name] = value
    return _b64url(hashlib.sha256(_json.dumps(canonical)).digest())


def access_token_hash(token: str) -> str:
    """``ath``: the base64url SHA-256 of the access token's ASCII bytes (RFC 9449 §4.2)."""
    return _b64url(hashlib.sha256(token.encode("ascii")).digest())


def _path(path: str) -> str:
    def fix(m: re.Match[str]) -> str:
        char = chr(int(m.group(0)[1:], 16))
        return char if char in _UNRESERVED else m.group(0).upper()

    return _PERCENT.sub(fix, path) or "/"


def normalize_url(url: str) -> str | None:
    """``url`` as RFC 9449 §4.3 compares it: scheme and host lower-cased, the default port
    dropped, percent-encoding normalised, an empty path ``/``, no query, fragment or userinfo
    (RFC 3986 §6.2.2-6.2.3). ``None`` when it is not an absolute http(s) URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    return f"{scheme}://{netloc}{_path(parts.path)}"


def request_url(scope: Scope, public_url: str | None) -> str:
    """The URL the client sent this request to: ``MCP_PUBLIC_URL`` (the public base, as the
    protected-resource metadata uses it) + the path below the mount point, else the request's
    own scheme, ``Host`` and full path."""
    root: str = scope.get("root_path", "")
    path: str = scope.get("path", "")
    below = path[len(root):] if root and path.startswith(root) else path
    if public_url:
        return public_url.strip().rstrip("/") + below
    host = None
    for k, v in scope["headers"]:
        if k == b"host":
            host = v.decode("latin-1")
    if host is None:
        server = scope.get("server")
        host = f"{server[0]}:{server[1]}" if server else "localhost"
    return f"{scope.get('scheme', 'http')}://{host}{root}{below}"


@dataclass(frozen=True, slots=True)
class CheckedProof:
    """A proof that passed every check of its own."""

    jkt: str
    """The RFC 7638 thumbprint of its key (the token's ``cnf.jkt`` must be this)."""
    replay_key: str
    """What the replay cache remembers it by (a digest of the key's thumbprint and ``jti``)."""
    nonce_stale: bool = False
    """Its nonce is the previous one: the answer should carry the current one."""


def proof_error(description: str, reason: str) -> AuthError:
    """401 ``invalid_dpop_proof`` (the challenge's scheme and parameters are set by the guard)."""
    return AuthError(401, "invalid_dpop_proof", description, reason=reason, scheme="DPoP")


class ProofChecker:
    """Checks one request's DPoP proof (see the module docstring).

    Args:
        algs: the JWS algorithms accepted (asymmetric ones of :data:`DEFAULT_ALGS`).
        window: seconds a proof's ``iat`` may be from now, either way.
        nonce_state: when the server asks for nonces, ``nonce -> "current" | "previous" | None``
            (valid, valid but about to lapse, not valid); ``fresh_nonce()`` gives the current one.
        clock: wall-clock seconds (tests).

    Raises:
        ValueError: an algorithm that is not an asymmetric one of :data:`DEFAULT_ALGS`.
    """

    def __init__(self, algs: Sequence[str] = DEFAULT_ALGS, *, window: float = 300.0,
                 nonce_state: Callable[[str], str | None] | None = None,
                 fresh_nonce: Callable[[], str] | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        unknown = [a for a in algs if a not in DEFAULT_ALGS]
        if unknown or not algs:
            raise ValueError(f"MCP_AUTH_DPOP_ALGS must list asymmetric JWS algorithms from {', '.join(DEFAULT_ALGS)}; "
                             f"got {', '.join(algs) or 'none'}")
        self.algs = tuple(algs)
        self.window = window
        self.nonce_state = nonce_state
        self.fresh_nonce = fresh_nonce
        self.clock = clock or time.time

    def check(self, proofs: Sequence[bytes], method: str, url: str, token: str | None) -> CheckedProof:
        """Check the request's ``DPoP`` header values against its method, URL and token (``None``
        at a token endpoint, where the proof has no ``ath``).

        Raises:
            AuthError: 401 ``invalid_dpop_proof``, or ``use_dpop_nonce`` with a fresh nonce.
        """
        if not proofs:
            raise proof_error("DPoP proof is missing.", "missing_proof")
        if len(proofs) > 1:
            raise proof_error("More than one DPoP proof.", "multiple_proofs")
        raw = proofs[0]
        if len(raw) > MAX_PROOF_BYTES:
            raise proof_error("DPoP proof is too large.", "too_large")
        proof = raw.decode("latin-1").strip()
        if not _JWT.fullmatch(proof):
            raise proof_error("DPoP proof is not a JWT.", "malformed")
        header = self._header(proof)
        claims = self._verified(proof, header)
        jkt = self._claims(claims, method, url, token, header["jwk"])
        stale = self._nonce(claims)
        replay = hashlib.sha256(f"{jkt}:{claims['jti']}".encode()).hexdigest()
        return CheckedProof(jkt, replay, stale)

    def _header(self, proof: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(proof)
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            raise proof_error("DPoP proof is not a JWT.", "malformed") from None
        typ = header.get("typ")
        if not isinstance(typ, str) or typ.lower() != "dpop+jwt":
            raise proof_error("DPoP proof type (typ) must be dpop+jwt.", "typ")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algs:
            raise proof_error("DPoP proof algorithm is not accepted.", "algorithm")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict):
            raise proof_error("DPoP proof has no public key (jwk).", "no_jwk")
        if any(name in jwk for name in _PRIVATE):
            raise proof_error("DPoP proof key (jwk) must be a public key.", "private_key")
        if jwk.get("kty") != _KTY[alg[:2]] or (alg in _CURVES and jwk.get("crv") not in _CURVES[alg]):
            raise proof_error("DPoP proof key does not match its algorithm.", "key_mismatch")
        return header

    def _verified(self, proof: str, header: Mapping[str, Any]) -> dict[str, Any]:
        try:
            key = PyJWK(dict(header["jwk"]), algorithm=header["alg"])
            claims: dict[str, Any] = jwt.decode(
                proof, key, algorithms=[header["alg"]],
                options={"verify_exp": False, "verify_nbf": False, "verify_iat": False, "verify_aud": False,
                         "verify_iss": False, "enforce_minimum_key_length": True})
        except jwt.InvalidSignatureError:
            raise proof_error("DPoP proof signature is invalid.", "signature") from None
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            raise proof_error("DPoP proof is malformed.", "malformed") from None
        return claims

    def _claims(self, claims: Mapping[str, Any], method: str, url: str, token: str | None,
                jwk: Mapping[str, Any]) -> str:
        jti = claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= 512:
            raise proof_error("DPoP proof has no valid jti.", "jti")
        if claims.get("htm") != method:
            raise proof_error("DPoP proof method (htm) does not match the request.", "htm")
        htu = claims.get("htu")
        want = normalize_url(url)
        if not isinstance(htu, str) or want is None or normalize_url(htu) != want:
            raise proof_error("DPoP proof URL (htu) does not match the request.", "htu")
        iat = claims.get("iat")
        if not isinstance(iat, (int, float)) or isinstance(iat, bool) or abs(self.clock() - iat) > self.window:
            raise proof_error("DPoP proof is too old or from the future (iat).", "iat")
        ath = claims.get("ath")
        if token is not None and (not isinstance(ath, str)
                                  or not hmac.compare_digest(ath.encode(), access_token_hash(token).encode())):
            raise proof_error("DPoP proof does not match the access token (ath).", "ath")
        try:
            return jwk_thumbprint(jwk)
        except ValueError:
            raise proof_error("DPoP proof key is malformed.", "bad_key") from None

    def _nonce(self, claims: Mapping[str, Any]) -> bool:
        if self.nonce_state is None or self.fresh_nonce is None:
            return False
        nonce = claims.get("nonce")
        state = self.nonce_state(nonce) if isinstance(nonce, str) else None
        if state is None:
            raise AuthError(401, "use_dpop_nonce", "Resource server requires nonce in DPoP proof.",
                            reason="nonce", scheme="DPoP", nonce=self.fresh_nonce())
        return state == "previous"
