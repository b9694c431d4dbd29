"""jwt mode (HS256, shared secret), the factory, settings, and secrets kept out of reprs and logs."""

from __future__ import annotations

import logging
import time
from typing import Any

import jwt
import pytest

from mcpcore import Settings
from mcpcore.auth import Authenticator, AuthError, JwtAuthenticator, OAuthAuthenticator, create_authenticator
from mcpcore.errors import ConfigurationError

from .issuer import Issuer, unsigned_token

pytestmark = pytest.mark.anyio

SECRET = "0123456789abcdef0123456789abcdef-very-secret"


def hs(claims: dict[str, Any] | None = None, secret: str = SECRET, **kw: Any) -> str:
    now = int(time.time())
    base: dict[str, Any] = {"cid": "c1", "sub": "u1", "tid": "t1", "scope": "a b", "exp": now + 60, "iat": now}
    base.update(claims or {})
    base.update(kw)
    return jwt.encode({k: v for k, v in base.items() if v is not None}, secret, algorithm="HS256")


def jwt_settings(**kw: Any) -> Settings:
    env = {"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SECRET, **kw}
    return Settings.from_env(env)


async def refused(auth: Authenticator, header: str | None) -> AuthError:
    with pytest.raises(AuthError) as ei:
        await auth.authenticate(header)
    return ei.value


async def test_valid_hs256() -> None:
    auth = create_authenticator(jwt_settings())
    assert isinstance(auth, JwtAuthenticator)
    await auth.start()
    token = hs()
    info = await auth.authenticate(f"Bearer {token}")
    await auth.close()
    assert (info.client_id, info.subject, info.tenant_id, info.scopes) == ("c1", "u1", "t1", ("a", "b"))
    assert info.token == token


async def test_wrong_secret() -> None:
    auth = JwtAuthenticator(SECRET)
    e = await refused(auth, "Bearer " + hs(secret="another-secret-of-at-least-32-characters!"))
    assert (e.status, e.error, e.description) == (401, "invalid_token", "Token signature is invalid.")


async def test_expired_and_missing_exp() -> None:
    auth = JwtAuthenticator(SECRET)
    e = await refused(auth, "Bearer " + hs(exp=int(time.time()) - 10))
    assert (e.status, e.description) == (401, "Token has expired.")
    e = await refused(auth, "Bearer " + hs(exp=None))
    assert (e.status, e.description) == (401, "Token is missing the 'exp' claim.")


async def test_expected_issuer_and_audience() -> None:
    auth = create_authenticator(jwt_settings(MCP_JWT_EXPECTED_ISSUER="https://me", MCP_JWT_EXPECTED_AUDIENCE="api"))
    assert isinstance(auth, JwtAuthenticator)
    ok = await auth.authenticate("Bearer " + hs(iss="https://me", aud="api"))
    assert ok.client_id == "c1"
    assert (await refused(auth, "Bearer " + hs(iss="https://you", aud="api"))).reason == "issuer"
    assert (await refused(auth, "Bearer " + hs(iss="https://me", aud="other"))).reason == "audience"
    assert (await refused(auth, "Bearer " + hs(aud="api"))).description == "Token is missing the 'iss' claim."


async def test_without_expectations_iss_and_aud_are_not_checked() -> None:
    auth = JwtAuthenticator(SECRET)
    assert (await auth.authenticate("Bearer " + hs(iss="anyone", aud="anything"))).client_id == "c1"


async def test_only_hs256(issuer: Issuer) -> None:
    auth = JwtAuthenticator(SECRET)
    rs = issuer.mint("rsa")
    hs512 = jwt.encode({"cid": "c1", "exp": int(time.time()) + 60}, SECRET * 2, algorithm="HS512")
    for token in (rs, hs512, unsigned_token({"cid": "c1", "exp": int(time.time()) + 60})):
        e = await refused(auth, f"Bearer {token}")
        assert (e.status, e.description) == (401, "Token signing algorithm is not accepted.")


async def test_claim_mapping_failures() -> None:
    auth = JwtAuthenticator(SECRET)
    assert (await refused(auth, "Bearer " + hs(cid=None))).reason == "client_id"
    assert (await refused(auth, "Bearer " + hs(tid="bad..tenant"))).reason == "tenant"
    assert (await refused(auth, "Bearer " + hs(sub=5))).status == 401
    assert (await auth.authenticate("Bearer " + hs(tid=None))).tenant_id is None


@pytest.mark.parametrize(
    "header,status,error,reason",
    [
        (None, 401, None, "missing"),
        ("", 401, None, "missing"),
        ("Basic dXNlcjpwYXNz", 401, None, "unsupported_scheme"),
        ("Bearer", 400, "invalid_request", "malformed_header"),
        ("Bearer    ", 400, "invalid_request", "malformed_header"),
        ("Bearer a b", 400, "invalid_request", "malformed_header"),
        ("Bearer a\"b", 400, "invalid_request", "malformed_header"),
        ("Bearer " + "a" * 20_000, 401, "invalid_token", "too_large"),
        ("Bearer abc", 401, "invalid_token", "malformed"),
    ],
)
async def test_header_parsing(header: str | None, status: int, error: str | None, reason: str) -> None:
    e = await refused(JwtAuthenticator(SECRET), header)
    assert (e.status, e.error, e.reason) == (status, error, reason)


# -- construction --------------------------------------------------------------------------------


@pytest.mark.parametrize("secret", [None, "", "x" * 31])
def test_short_or_missing_secret_refuses_to_start(secret: str | None) -> None:
    env = {"MCP_AUTH_MODE": "jwt"} | ({"MCP_AUTH_SECRET_KEY": secret} if secret else {})
    with pytest.raises(ConfigurationError, match="MCP_AUTH_SECRET_KEY"):
        create_authenticator(Settings.from_env(env))


def test_thirty_two_chars_is_enough() -> None:
    assert isinstance(create_authenticator(Settings.from_env({}, auth_mode="jwt", auth_secret_key="x" * 32)),
                      JwtAuthenticator)


def test_mode_none_has_no_authenticator() -> None:
    assert create_authenticator(Settings.from_env({})) is None


@pytest.mark.parametrize(
    "env,var",
    [
        ({"OAUTH_AUDIENCE": "api"}, "OAUTH_ISSUER_URL"),
        ({"OAUTH_ISSUER_URL": "https://issuer.example.com"}, "OAUTH_AUDIENCE"),
        ({"OAUTH_ISSUER_URL": "issuer.example.com", "OAUTH_AUDIENCE": "api"}, "OAUTH_ISSUER_URL"),
        ({"OAUTH_ISSUER_URL": "http://issuer.example.com", "OAUTH_AUDIENCE": "api"}, "OAUTH_ISSUER_URL"),
        ({"OAUTH_ISSUER_URL": "https://issuer.example.com", "OAUTH_AUDIENCE": "api",
          "OAUTH_JWKS_URI": "http://keys.example.com/jwks"}, "OAUTH_JWKS_URI"),
    ],
)
def test_oauth_configuration_errors_name_the_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigurationError, match=var):
        create_authenticator(Settings.from_env({"MCP_AUTH_MODE": "oauth", **env}))


def test_oauth_settings_reach_the_authenticator() -> None:
    s = Settings.from_env({
        "MCP_AUTH_MODE": "oauth", "OAUTH_ISSUER_URL": "https://issuer.example.com", "OAUTH_AUDIENCE": "api",
        "OAUTH_JWKS_URI": "https://keys.example.com/jwks", "OAUTH_JWKS_COOLDOWN_MS": "1000",
        "OAUTH_JWKS_TIMEOUT_MS": "250", "MCP_SERVER_RESOURCE_IDENTIFIER": "https://mcp.example.com/mcp",
    })
    auth = create_authenticator(s)
    assert isinstance(auth, OAuthAuthenticator)
    assert (auth.issuer, auth.audience, auth.jwks_uri) == ("https://issuer.example.com", "api",
                                                           "https://keys.example.com/jwks")
    assert (auth.cooldown, auth.timeout, auth.resource) == (1.0, 0.25, "https://mcp.example.com/mcp")
    loopback = Settings.from_env({"MCP_AUTH_MODE": "oauth", "OAUTH_ISSUER_URL": "http://localhost:9",
                                  "OAUTH_AUDIENCE": "api"})
    assert isinstance(create_authenticator(loopback), OAuthAuthenticator)


def test_settings_defaults_and_parsing() -> None:
    d = Settings.from_env({})
    assert (d.auth_secret_key, d.oauth_jwks_cooldown_ms, d.oauth_jwks_timeout_ms, d.auth_disable_scope_checks,
            d.server_resource_identifier) == (None, 300_000, 5_000, False, None)
    with pytest.raises(ConfigurationError, match="OAUTH_JWKS_TIMEOUT_MS"):
        Settings.from_env({"OAUTH_JWKS_TIMEOUT_MS": "0"})
    with pytest.raises(ConfigurationError, match="MCP_AUTH_DISABLE_SCOPE_CHECKS"):
        Settings.from_env({"MCP_AUTH_DISABLE_SCOPE_CHECKS": "maybe"})
    names = {v for v, _, _ in Settings.variables()}
    assert {"MCP_AUTH_SECRET_KEY", "MCP_JWT_EXPECTED_ISSUER", "MCP_JWT_EXPECTED_AUDIENCE", "OAUTH_ISSUER_URL",
            "OAUTH_AUDIENCE", "OAUTH_JWKS_URI", "OAUTH_JWKS_COOLDOWN_MS", "OAUTH_JWKS_TIMEOUT_MS",
            "MCP_SERVER_RESOURCE_IDENTIFIER", "MCP_AUTH_DISABLE_SCOPE_CHECKS"} <= names


def test_disabled_scope_checks_warn_at_startup(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcpcore.auth"):
        create_authenticator(jwt_settings(MCP_AUTH_DISABLE_SCOPE_CHECKS="true", MCP_PUBLIC_URL="https://x"))
    assert any("MCP_AUTH_DISABLE_SCOPE_CHECKS" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)


# -- secrets -------------------------------------------------------------------------------------


async def test_secret_never_in_repr_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    settings = jwt_settings()
    auth = create_authenticator(settings)
    assert auth is not None
    token = hs()
    info = await auth.authenticate(f"Bearer {token}")
    with caplog.at_level(logging.DEBUG, logger="mcpcore"):
        await refused(auth, "Bearer " + hs(exp=int(time.time()) - 5))
        create_authenticator(settings)
    texts = [repr(settings), str(settings), repr(auth), str(auth), repr(info), repr(settings.auth_secret_key),
             str(settings.auth_secret_key), caplog.text, repr(vars(auth))]
    for text in texts:
        assert SECRET not in text
    assert token not in repr(info)
    assert "**" in repr(settings.auth_secret_key)
