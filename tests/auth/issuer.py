"""A hermetic OAuth issuer for the auth tests: generated keys, a JWKS over a real loopback HTTP server,
and helpers that mint (good and deliberately bad) tokens.

The server is a Starlette app under uvicorn in a daemon thread, on a socket bound to 127.0.0.1:0.
Tests steer it through :class:`Issuer`: which keys are published, an artificial delay, the status
code, and a count of JWKS requests.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jwt
import orjson
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

AUDIENCE = "mcp-api"


@dataclass
class SigningKey:
    """A private key, its ``kid`` and the algorithm it signs with."""

    kid: str
    alg: str
    private: Any
    publish_alg: bool = True

    def public_jwk(self) -> dict[str, Any]:
        algo = jwt.get_algorithm_by_name(self.alg)
        jwk: dict[str, Any] = algo.to_jwk(self.private.public_key(), as_dict=True)
        jwk["kid"] = self.kid
        jwk["use"] = "sig"
        if self.publish_alg:
            jwk["alg"] = self.alg
        return jwk


def rsa_key(kid: str, alg: str = "RS256") -> SigningKey:
    return SigningKey(kid, alg, rsa.generate_private_key(public_exponent=65537, key_size=2048))


def ec_key(kid: str) -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned_token(claims: Mapping[str, Any], header: Mapping[str, Any] | None = None) -> str:
    """An ``alg: none`` token (no signature), built by hand because no library should mint one."""
    h = {"alg": "none", "typ": "JWT", **(header or {})}
    return f"{_b64(orjson.dumps(h))}.{_b64(orjson.dumps(dict(claims)))}."


@dataclass
class Issuer:
    """The issuer's state; ``url`` is set once the server is listening."""

    keys: dict[str, SigningKey]
    url: str = ""
    published: list[SigningKey] = field(default_factory=list)
    fetches: int = 0
    delay: float = 0.0
    status: int = 200
    body: bytes | None = None

    def reset(self, published: Sequence[str] = ("rsa", "ec", "ps")) -> None:
        self.published = [self.keys[name] for name in published]
        self.fetches = 0
        self.delay = 0.0
        self.status = 200
        self.body = None

    def publish(self, *names: str) -> None:
        self.published = [self.keys[n] for n in names]

    @property
    def jwks_uri(self) -> str:
        return self.url + "/.well-known/jwks.json"

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        base: dict[str, Any] = {"iss": self.url, "aud": AUDIENCE, "sub": "user-1", "cid": "client-1",
                                "tid": "acme", "scope": "tool:echo:read", "iat": now, "exp": now + 300}
        base.update(overrides)
        return {k: v for k, v in base.items() if v is not None}

    def mint(self, key: str | SigningKey = "rsa", *, header: Mapping[str, Any] | None = None,
             **claims: Any) -> str:
        """A token signed by ``key`` (a name in :attr:`keys` or a key); ``claims`` override the
        defaults and a ``None`` value drops a claim."""
        k = self.keys[key] if isinstance(key, str) else key
        return jwt.encode(self.claims(**claims), k.private, algorithm=k.alg, headers={"kid": k.kid, **(header or {})})

    async def _jwks(self, request: Request) -> Response:
        self.fetches += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        body = self.body if self.body is not None else orjson.dumps({"keys": [k.public_jwk() for k in self.published]})
        return Response(body, status_code=self.status, media_type="application/json")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/.well-known/jwks.json", self._jwks)])


def make_keys() -> dict[str, SigningKey]:
    return {
        "rsa": rsa_key("rsa-1", "RS256"),
        "ps": rsa_key("ps-1", "PS256"),
        "ec": ec_key("ec-1"),
        "rotated": rsa_key("rsa-2", "RS256"),
        "other": rsa_key("rsa-3", "RS256"),
        # Not published under its own kid: used to sign with a key the JWKS does not hold.
        "rogue": rsa_key("rsa-1", "RS256"),
    }


@contextmanager
def serve(issuer: Issuer) -> Iterator[Issuer]:
    """Run the issuer on a free loopback port until the block exits."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(issuer.app(), log_level="warning", lifespan="off", ws="none", http="h11",
                            timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="test-issuer")
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test issuer did not start")
        time.sleep(0.01)
    issuer.url = f"http://127.0.0.1:{port}"
    try:
        yield issuer
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()
