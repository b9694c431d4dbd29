"""Auth fixtures: one hermetic loopback issuer for the session, reset before every test, and a
real authorization server (oidc-provider) and an upstream OpenID provider for the session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .docserver import DocServer, run_docserver
from .issuer import Issuer, make_keys, serve
from .provider import Provider, run_provider
from .upstream import UpstreamProvider, run_upstream


class FakeClock:
    """A monotonic clock the test advances by hand (JWKS cooldowns, cache age)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="session")
def issuer_server() -> Iterator[Issuer]:
    with serve(Issuer(keys=make_keys())) as issuer:
        yield issuer


@pytest.fixture
def issuer(issuer_server: Issuer) -> Iterator[Issuer]:
    issuer_server.reset()
    yield issuer_server
    issuer_server.reset()


@pytest.fixture(scope="session")
def provider() -> Iterator[Provider]:
    """A real authorization server (oidc-provider on Node 22) for the DPoP and delegation tests."""
    with run_provider() as p:
        yield p


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def upstream_server() -> Iterator[UpstreamProvider]:
    """The real upstream OpenID provider (oidc-provider on Node 22), one for the session."""
    with run_upstream() as provider:
        yield provider


@pytest.fixture(scope="module")
def upstream(upstream_server: UpstreamProvider) -> Iterator[UpstreamProvider]:
    """The upstream provider as a module finds it: the default person logs in, tokens live an hour."""
    upstream_server.set_user()
    upstream_server.set_access_ttl(3600)
    yield upstream_server


@pytest.fixture(scope="session")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocServer]:
    """An HTTPS server of client ID metadata documents with its own CA, one for the session (each
    test serves its documents under its own paths)."""
    with run_docserver(tmp_path_factory.mktemp("tls")) as server:
        yield server
