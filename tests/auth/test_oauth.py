"""oauth mode against the hermetic loopback issuer: every token answered as documented."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from mcpcore import Settings
from mcpcore.auth import AuthError, OAuthAuthenticator, create_authenticator

from .conftest import FakeClock
from .issuer import AUDIENCE, Issuer, unsigned_token

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def oauth(issuer: Issuer, clock: FakeClock | None = None, *, start: bool = True,
                **kw: Any) -> AsyncIterator[OAuthAuthenticator]:
    opts: dict[str, Any] = {"issuer": issuer.url, "audience": AUDIENCE, "cooldown": 300.0, "timeout": 2.0}
    if clock is not None:
        opts["clock"] = clock
    opts.update(kw)
    auth = OAuthAuthenticator(**opts)
    if start:
        await auth.start()
    try:
        yield auth
    finally:
        await auth.close()


async def refused(auth: OAuthAuthenticator, token: str) -> AuthError:
    with pytest.raises(AuthError) as ei:
        await auth.authenticate(f"Bearer {token}")
    return ei.value


# -- valid tokens ----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["rsa", "ec", "ps"])
async def test_valid_token_per_algorithm(issuer: Issuer, key: str) -> None:
    async with oauth(issuer) as auth:
        token = issuer.mint(key, scp=["a:read"], mcp_tool_scopes="tool:x:write")
        info = await auth.authenticate(f"Bearer {token}")
    assert info.client_id == "client-1"
    assert info.subject == "user-1"
    assert info.tenant_id == "acme"
    assert info.scopes == ("a:read", "tool:echo:read", "tool:x:write")
    assert info.expires_at == issuer.claims()["exp"] or abs(info.expires_at - issuer.claims()["exp"]) <= 2
    assert info.token == token
    assert info.claims["iss"] == issuer.url
    assert issuer.fetches == 1


async def test_default_jwks_uri_is_derived_from_the_issuer(issuer: Issuer) -> None:
    auth = OAuthAuthenticator(issuer=issuer.url + "/", audience=AUDIENCE)
    assert auth.jwks_uri == issuer.jwks_uri


async def test_lowercase_scheme_and_client_id_claim(issuer: Issuer) -> None:
    async with oauth(issuer) as auth:
        info = await auth.authenticate("bearer " + issuer.mint(cid=None, client_id="client-2"))
    assert info.client_id == "client-2"


async def test_no_kid_with_a_single_compatible_key(issuer: Issuer) -> None:
    token = jwt.encode(issuer.claims(), issuer.keys["ec"].private, algorithm="ES256")
    async with oauth(issuer) as auth:
        assert (await auth.authenticate(f"Bearer {token}")).client_id == "client-1"
        issuer.publish("rsa", "ec", "ps", "other")
    issuer.publish("rsa", "other")
    token = jwt.encode(issuer.claims(), issuer.keys["rsa"].private, algorithm="RS256")
    async with oauth(issuer) as auth:
        e = await refused(auth, token)
    assert (e.status, e.reason, e.description) == (401, "kid_required", "Token header has no 'kid'.")


# -- refused tokens --------------------------------------------------------------------------------


async def test_expired(issuer: Issuer) -> None:
    now = int(time.time())
    async with oauth(issuer) as auth:
        e = await refused(auth, issuer.mint(iat=now - 600, exp=now - 60))
    assert (e.status, e.error, e.description, e.reason) == (401, "invalid_token", "Token has expired.", "expired")
    assert e.www_authenticate("https://x/.well-known/oauth-protected-resource/mcp") == (
        'Bearer realm="mcp", error="invalid_token", error_description="Token has expired.", '
        'resource_metadata="https://x/.well-known/oauth-protected-resource/mcp"')


async def test_not_yet_valid(issuer: Issuer) -> None:
    async with oauth(issuer) as auth:
        e = await refused(auth, issuer.mint(nbf=int(time.time()) + 600))
    assert (e.status, e.description) == (401, "Token is not yet valid.")


async def test_wrong_issuer(issuer: Issuer) -> None:
    async with oauth(issuer) as auth:
        e = await refused(auth, issuer.mint(iss="https://evil.example.com"))
    assert (e.status, e.error, e.description) == (401, "invalid_token", "Token issuer is not accepted.")


async def test_issuer_is_compared_exactly(issuer: Issuer) -> None:
    async with oauth(issuer) as auth:
        e = await refused(auth, issuer.mint(iss=issuer.url + "/"))
    assert e.reason == "issuer"


async def test_wrong_audience(issuer: Issuer) -> None:
    async with oauth(issuer) as auth:
        e = await refused(auth, issuer.mint(aud="another-api"))
        ok = await auth.authenticate("Bearer " + issuer.mint(aud=["another-api", AUDIENCE]))
    assert (e.status, e.error, e.description) == (401, "invalid_token", "Token audience is not accepted.")
    assert ok.client_id == "client-1"


@pytest.mark.parametrize("claim", ["exp", "iss", "aud"])
async def test_required_claims(issuer: Issuer, claim: str) -> None:
    async with oauth(issuer) as auth:
        e = await refused(auth, issuer.mint("rsa", **{claim: None}))
    assert (e.status, e.description) == (401, f"Token is missing the '{claim}' claim.")


async def test_wrong_key_same_kid(issuer: Issuer) -> None:
    # Signed by a key the JWKS does not hold, under the kid of one it does.
    async with oauth(issuer) as auth:
        e = await refused(auth, issuer.mint("rogue"))
    assert (e.status, e.error, e.description) == (401, "invalid_token", "Token signature is invalid.")


async def test_wrong_key_unknown_kid(issuer: Issuer, clock: FakeClock) -> None:
    async with oauth(issuer, clock) as auth:
        e = await refused(auth, issuer.mint("other"))
    assert (e.status, e.description, e.reason) == (401, "Token signing key is unknown.", "unknown_key")
    assert issuer.fetches == 1  # within the cooldown of the startup fetch: no refetch


async def test_tampered_payload(issuer: Issuer) -> None:
    head, _, sig = issuer.mint().split(".")
    forged = jwt.utils.base64url_encode(
        jwt.utils.base64url_decode(issuer.mint(cid="admin").split(".")[1])).decode()
    async with oauth(issuer) as auth:
        e = await refused(auth, f"{head}.{forged}.{sig}")
    assert e.reason == "signature"


async def test_alg_none_is_refused_before_any_key_lookup(issuer: Issuer) -> None:
    token = unsigned_token(issuer.claims(), {"kid": "rsa-1"})
    async with oauth(issuer, start=False) as auth:
        e = await refused(auth, token)
    assert (e.status, e.error, e.description) == (401, "invalid_token", "Token signing algorithm is not accepted.")
    assert issuer.fetches == 0


async def test_hs256_is_refused(issuer: Issuer) -> None:
    # The classic confusion: HMAC over the RSA public key, under that key's kid.
    pem = issuer.keys["rsa"].private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    import hashlib
    import hmac

    head = jwt.utils.base64url_encode(b'{"alg":"HS256","typ":"JWT","kid":"rsa-1"}')
    body = jwt.utils.base64url_encode(jwt.utils.base64url_decode(issuer.mint().split(".")[1]))
    sig = jwt.utils.base64url_encode(hmac.new(pem, head + b"." + body, hashlib.sha256).digest())
    secret_signed = jwt.encode(issuer.claims(), "s" * 40, algorithm="HS256", headers={"kid": "rsa-1"})
    async with oauth(issuer) as auth:
        for token in ((head + b"." + body + b"." + sig).decode(), secret_signed):
            e = await refused(auth, token)
            assert (e.status, e.reason) == (401, "algorithm")


async def test_algorithm_key_mismatch(issuer: Issuer) -> None:
    # An ES256 token naming an RSA key, and a PS256 token naming a key published with alg RS256.
    es_on_rsa = jwt.encode(issuer.claims(), issuer.keys["ec"].private, algorithm="ES256", headers={"kid": "rsa-1"})
    ps_on_rs = jwt.encode(issuer.claims(), issuer.keys["rsa"].private, algorithm="PS256", headers={"kid": "rsa-1"})
    async with oauth(issuer) as auth:
        for token in (es_on_rsa, ps_on_rs):
            e = await refused(auth, token)
            assert (e.status, e.description) == (401, "Token signing key does not match its algorithm.")


async def test_malformed_token(issuer: Issuer) -> None:
    async with oauth(issuer, start=False) as auth:
        e = await refused(auth, "abc.def")
    assert (e.status, e.error, e.description) == (401, "invalid_token", "Token is malformed.")


async def test_missing_client_id(issuer: Issuer) -> None:
    async with oauth(issuer) as auth:
        e = await refused(auth, issuer.mint(cid=None))
        e2 = await refused(auth, issuer.mint(cid=""))
        e3 = await refused(auth, issuer.mint(cid=42))
    for err in (e, e2, e3):
        assert (err.status, err.error, err.description) == (
            401, "invalid_token", "Token is missing a valid client id (cid or client_id).")


async def test_scopes_from_all_three_claims(issuer: Issuer) -> None:
    async with oauth(issuer) as auth:
        a = await auth.authenticate("Bearer " + issuer.mint(scp="x:read y:read", scope="y:read z:write",
                                                             mcp_tool_scopes=["tool:a:run", "x:read"]))
        b = await auth.authenticate("Bearer " + issuer.mint(scope=None))
        c = await auth.authenticate("Bearer " + issuer.mint(scope=None, mcp_tool_scopes="only:one"))
        bad = await refused(auth, issuer.mint(scp=7))
        bad2 = await refused(auth, issuer.mint(scp=["ok", 3]))
    assert a.scopes == ("x:read", "y:read", "z:write", "tool:a:run")
    assert b.scopes == ()
    assert c.scopes == ("only:one",)
    assert (bad.status, bad.description) == (401, "Token scope claims are malformed.")
    assert bad2.reason == "scopes"


async def test_tenant(issuer: Issuer) -> None:
    async with oauth(issuer) as auth:
        none = await auth.authenticate("Bearer " + issuer.mint(tid=None))
        bad = await refused(auth, issuer.mint(tid="../other"))
    assert none.tenant_id is None
    assert (bad.status, bad.error, bad.description) == (401, "invalid_token", "Token tenant id (tid) is invalid.")


# -- RFC 8707 ----------------------------------------------------------------------------------------

RESOURCE = "https://mcp.example.com/mcp"


async def test_resource_indicator(issuer: Issuer) -> None:
    async with oauth(issuer, resource=RESOURCE) as auth:
        by_claim = await auth.authenticate("Bearer " + issuer.mint(resource=RESOURCE))
        by_list = await auth.authenticate("Bearer " + issuer.mint(resource=["https://a", RESOURCE + "/"]))
        by_aud = await auth.authenticate("Bearer " + issuer.mint(aud=[AUDIENCE, RESOURCE]))
        e = await refused(auth, issuer.mint(resource="https://other.example.com/mcp"))
        e2 = await refused(auth, issuer.mint())
    assert by_claim.client_id == by_list.client_id == by_aud.client_id == "client-1"
    for err in (e, e2):
        assert (err.status, err.error) == (403, "invalid_token")
        assert err.description == "Token is not valid for this resource."
        assert err.json_rpc_code == -32005


# -- JWKS caching, rotation, cooldown, timeouts ------------------------------------------------------


async def test_rotation_refetches_once_per_cooldown(issuer: Issuer, clock: FakeClock) -> None:
    async with oauth(issuer, clock, cooldown=300.0) as auth:
        assert issuer.fetches == 1
        assert (await auth.authenticate("Bearer " + issuer.mint("rsa"))).client_id == "client-1"
        issuer.publish("rotated")  # the issuer rotates: rsa-1 out, rsa-2 in

        # Right after a fetch, an unknown kid is refused without a refetch.
        e = await refused(auth, issuer.mint("rotated"))
        assert (e.status, e.reason, issuer.fetches) == (401, "unknown_key", 1)

        # Once the cooldown has passed, the unknown kid triggers one refetch that finds the new key.
        clock.advance(301)
        assert (await auth.authenticate("Bearer " + issuer.mint("rotated"))).client_id == "client-1"
        assert issuer.fetches == 2

        # A second unknown kid within the new cooldown: no refetch.
        e = await refused(auth, issuer.mint("other"))
        assert (e.reason, issuer.fetches) == ("unknown_key", 2)
        # The withdrawn key is gone from the cache with the refetch.
        e = await refused(auth, issuer.mint("rsa"))
        assert (e.reason, issuer.fetches) == ("unknown_key", 2)
        assert auth.key_ids == ["rsa-2"]


async def test_concurrent_unknown_kids_share_one_fetch(issuer: Issuer, clock: FakeClock) -> None:
    async with oauth(issuer, clock) as auth:
        issuer.publish("rsa", "rotated")
        clock.advance(301)
        token = issuer.mint("rotated")
        results: list[str] = []

        async def one() -> None:
            results.append((await auth.authenticate(f"Bearer {token}")).client_id)

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(one)
    assert results == ["client-1"] * 20
    assert issuer.fetches == 2


async def test_stale_cache_is_refreshed(issuer: Issuer, clock: FakeClock) -> None:
    async with oauth(issuer, clock, cooldown=10.0, cache_max_age=60.0) as auth:
        await auth.authenticate("Bearer " + issuer.mint("rsa"))
        issuer.publish("ec")  # rsa-1 withdrawn
        clock.advance(30)
        await auth.authenticate("Bearer " + issuer.mint("rsa"))  # still cached: fine
        assert issuer.fetches == 1
        clock.advance(31)
        e = await refused(auth, issuer.mint("rsa"))
        assert (e.reason, issuer.fetches) == ("unknown_key", 2)


@pytest.mark.serial
async def test_slow_jwks_times_out_with_503(issuer: Issuer, clock: FakeClock) -> None:
    issuer.delay = 1.0
    async with oauth(issuer, clock, start=False, timeout=0.3) as auth:
        t0 = time.monotonic()
        e = await refused(auth, issuer.mint())
        elapsed = time.monotonic() - t0
        assert elapsed < 1.5
        assert (e.status, e.error, e.reason, e.json_rpc_code) == (503, None, "jwks_unavailable", -32000)
        assert e.description == "Authorization keys are temporarily unavailable."
        assert e.www_authenticate("https://x/m") is None
        assert e.headers("https://x/m") == {"Cache-Control": "no-store", "Retry-After": "1"}
        # Within the failure backoff: 503 again without touching the issuer.
        e = await refused(auth, issuer.mint())
        assert (e.status, auth.fetch_count) == (503, 1)
        # Issuer healthy again and backoff over: served.
        issuer.delay = 0.0
        clock.advance(1.5)
        assert (await auth.authenticate("Bearer " + issuer.mint())).client_id == "client-1"
        assert auth.fetch_count == 2


@pytest.mark.parametrize("status,body", [(500, None), (200, b"not json"), (200, b'{"no": "keys"}'),
                                         (200, b"[1, 2]")])
async def test_broken_jwks_is_503(issuer: Issuer, status: int, body: bytes | None) -> None:
    issuer.status, issuer.body = status, body
    async with oauth(issuer, start=False) as auth:
        e = await refused(auth, issuer.mint())
    assert e.status == 503


async def test_refetch_failure_after_cooldown_is_503_and_keeps_old_keys(issuer: Issuer, clock: FakeClock) -> None:
    async with oauth(issuer, clock) as auth:
        issuer.status = 502
        clock.advance(301)
        e = await refused(auth, issuer.mint("rotated"))
        assert e.status == 503
        # Known keys still verify.
        assert (await auth.authenticate("Bearer " + issuer.mint("rsa"))).client_id == "client-1"


async def test_start_with_unreachable_jwks_logs_and_serves_503(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    auth = OAuthAuthenticator(issuer=url, audience=AUDIENCE, timeout=1.0)
    with caplog.at_level(logging.WARNING, logger="mcpcore.auth"):
        await auth.start()
    assert any("JWKS" in r.getMessage() for r in caplog.records)
    with pytest.raises(AuthError) as ei:
        await auth.authenticate("Bearer " + jwt.encode({"a": 1}, "k" * 40, algorithm="HS256").replace(
            jwt.utils.base64url_encode(b'{"alg":"HS256","typ":"JWT"}').decode(),
            jwt.utils.base64url_encode(b'{"alg":"RS256","typ":"JWT","kid":"x"}').decode()))
    assert ei.value.status == 503
    await auth.close()
    await auth.close()  # idempotent


async def test_mock_transport_injection(issuer: Issuer) -> None:
    calls: list[str] = []
    jwks = {"keys": [issuer.keys["ec"].public_jwk()]}

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        return httpx.Response(200, json=jwks)

    settings = Settings.from_env({}, auth_mode="oauth", oauth_issuer_url="https://issuer.example.com",
                                 oauth_audience=AUDIENCE, public_url="https://mcp.example.com")
    auth = create_authenticator(settings, transport=httpx.MockTransport(handler))
    assert isinstance(auth, OAuthAuthenticator)
    await auth.start()
    try:
        token = jwt.encode(issuer.claims(iss="https://issuer.example.com"), issuer.keys["ec"].private,
                           algorithm="ES256", headers={"kid": "ec-1"})
        info = await auth.authenticate(f"Bearer {token}")
    finally:
        await auth.close()
    assert info.client_id == "client-1"
    assert calls == ["https://issuer.example.com/.well-known/jwks.json"]


async def test_failures_are_logged_without_the_token(issuer: Issuer, caplog: pytest.LogCaptureFixture) -> None:
    token = issuer.mint(iss="https://evil.example.com")
    async with oauth(issuer) as auth:
        with caplog.at_level(logging.DEBUG, logger="mcpcore.auth"):
            await refused(auth, token)
    text = caplog.text + "".join(repr(r.__dict__) for r in caplog.records)
    assert "issuer" in text
    assert token not in text
    assert token.split(".")[2] not in text


async def test_injected_client_is_not_closed(issuer: Issuer) -> None:
    async with httpx.AsyncClient() as client:
        async with oauth(issuer, http_client=client) as auth:
            assert (await auth.authenticate("Bearer " + issuer.mint("ps"))).client_id == "client-1"
        assert not client.is_closed
        assert (await client.get(issuer.jwks_uri)).status_code == 200
