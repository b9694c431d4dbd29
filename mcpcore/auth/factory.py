"""The app's authenticator, validated at startup: ``create_authenticator(settings)`` for
``MCP_AUTH_MODE``, and :func:`app_authenticator`, which adds what composes with it (the host
app's user, DPoP) and ``McpApp(auth=...)``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from .base import Authenticator
from .host import HostIdentity

if TYPE_CHECKING:
    import httpx

    from ..config import Settings

__all__ = ["app_authenticator", "create_authenticator", "with_dpop"]

log = logging.getLogger("mcpcore.auth")


def create_authenticator(
    settings: Settings,
    *,
    http_client: httpx.AsyncClient | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Authenticator | None:
    """The authenticator for ``settings.auth_mode``, or ``None`` for ``none``.

    Call once at startup, then ``await auth.start()`` before serving and ``await auth.close()`` at
    shutdown. Logs a warning when ``MCP_AUTH_DISABLE_SCOPE_CHECKS`` is on with auth enabled, and
    when neither ``MCP_PUBLIC_URL`` nor ``MCP_SERVER_RESOURCE_IDENTIFIER`` is set (metadata URLs then
    come from the request's ``Host`` header).

    ``http_client`` / ``transport`` are passed to the oauth authenticator (tests, custom TLS).

    Raises:
        ConfigurationError: naming the variable: ``MCP_AUTH_SECRET_KEY`` missing or shorter than
            32 characters (jwt); ``OAUTH_ISSUER_URL`` or ``OAUTH_AUDIENCE`` missing, or an issuer /
            ``OAUTH_JWKS_URI`` that is not https (http only on loopback) (oauth);
            ``OAUTH_INTROSPECTION_URL`` missing or not https (introspection).
    """
    mode = settings.auth_mode
    if mode == "none":
        if settings.auth_disable_scope_checks:
            log.info("MCP_AUTH_DISABLE_SCOPE_CHECKS has no effect with MCP_AUTH_MODE=none")
        return None
    auth: Authenticator
    # The modes' modules import PyJWT, cryptography and httpx: only an app that needs them pays.
    if mode == "jwt":
        from .jwt_auth import JwtAuthenticator

        auth = JwtAuthenticator(settings.auth_secret_key, issuer=settings.jwt_expected_issuer,
                                audience=settings.jwt_expected_audience)
    elif mode == "oauth":
        from .oauth import OAuthAuthenticator

        auth = OAuthAuthenticator(
            issuer=settings.oauth_issuer_url,
            audience=settings.oauth_audience,
            jwks_uri=settings.oauth_jwks_uri,
            resource=settings.server_resource_identifier,
            cooldown=settings.oauth_jwks_cooldown_ms / 1000,
            timeout=settings.oauth_jwks_timeout_ms / 1000,
            http_client=http_client,
            transport=transport,
        )
    elif mode == "introspection":
        from .introspection import IntrospectionVerifier
        from .verifier import VerifierAuthenticator

        secret = settings.oauth_introspection_client_secret
        verifier = IntrospectionVerifier(
            settings.oauth_introspection_url,
            client_id=settings.oauth_introspection_client_id,
            client_secret=secret.get_secret_value() if secret is not None else None,
            issuer=settings.oauth_issuer_url,
            audience=settings.oauth_audience,
            resource=settings.server_resource_identifier,
            cache_ttl=settings.oauth_introspection_cache_ttl_ms / 1000,
            timeout=settings.oauth_introspection_timeout_ms / 1000,
            http_client=http_client,
            transport=transport,
            max_calls=settings.oauth_introspection_max_calls,
            per_source=settings.oauth_introspection_max_calls_per_source,
        )
        auth = VerifierAuthenticator(verifier, mode="introspection")
    elif mode == "proxy":
        from .proxy import OAuthProxy

        auth = OAuthProxy.from_settings(settings, transport=transport)
    else:
        raise ConfigurationError(f"MCP_AUTH_MODE must be one of none, jwt, oauth, introspection, proxy; "
                                 f"got {mode!r}")
    if settings.auth_disable_scope_checks:
        log.warning("MCP_AUTH_DISABLE_SCOPE_CHECKS=true: tokens are verified but declared and runtime scope "
                    "checks are skipped; never use this in production")
    if mode != "proxy" and not settings.public_url and not settings.server_resource_identifier:
        log.warning("auth is on without MCP_PUBLIC_URL: the protected-resource metadata and WWW-Authenticate "
                    "URLs are derived from each request's Host header")
    return auth


def _as_authenticator(given: Any) -> Authenticator:
    from .verifier import VerifierAuthenticator

    if callable(getattr(given, "authenticate", None)) and hasattr(given, "start"):
        return given  # type: ignore[no-any-return]
    return VerifierAuthenticator(given)


def with_dpop(settings: Settings, tokens: Authenticator | None) -> Authenticator | None:
    """``tokens`` behind the DPoP checks when ``MCP_AUTH_DPOP`` is ``allowed`` or ``required``.

    Raises:
        ConfigurationError: DPoP without tokens to bind, an algorithm outside the asymmetric
            ones, or a nonce key shorter than 32 characters (each naming its variable).
    """
    if settings.auth_dpop == "off":
        return tokens
    if tokens is None:
        raise ConfigurationError(f"MCP_AUTH_DPOP={settings.auth_dpop} binds bearer tokens to keys, but this app has "
                                 "none: set MCP_AUTH_MODE to jwt, oauth or introspection, or pass McpApp(auth=...)")
    from .dpop import DEFAULT_ALGS
    from .dpop_guard import DPoPGuard

    key = settings.auth_dpop_nonce_key
    try:
        return DPoPGuard(tokens, required=settings.auth_dpop == "required",
                         algs=settings.auth_dpop_algs or DEFAULT_ALGS, window=settings.auth_dpop_iat_window_ms / 1000,
                         nonce_key=key.get_secret_value() if key is not None else None,
                         public_url=settings.public_url)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


def app_authenticator(settings: Settings, given: Any = None) -> Authenticator | None:
    """The app's authenticator: the host app's user first (``auth=HostIdentity(...)`` or
    ``MCP_AUTH_HOST_IDENTITY``), then the bearer token (``auth=`` a ``TokenVerifier`` or an
    ``Authenticator``, else ``MCP_AUTH_MODE``'s), behind DPoP when ``MCP_AUTH_DPOP`` is on.

    Raises:
        ConfigurationError: two token sources (``auth=`` or ``HostIdentity(tokens=...)`` and an
            ``MCP_AUTH_MODE`` other than ``none``), or what :func:`create_authenticator` and
            :func:`with_dpop` refuse.
    """
    host = given if isinstance(given, HostIdentity) else None
    if host is None and settings.auth_host_identity:
        try:
            host = HostIdentity(tenant=settings.auth_host_tenant)
        except ValueError:
            raise ConfigurationError(f"MCP_AUTH_HOST_TENANT must be a tenant id (letters, digits, '.', '_', '-', "
                                     f"at most 128), got {settings.auth_host_tenant!r}") from None
    own = given.tokens if isinstance(given, HostIdentity) else given
    if own is not None:
        if settings.auth_mode != "none":
            raise ConfigurationError(f"McpApp(auth=...) replaces MCP_AUTH_MODE={settings.auth_mode}; unset one of them")
        tokens: Authenticator | None = _as_authenticator(own)
    else:
        tokens = create_authenticator(settings)
    tokens = with_dpop(settings, tokens)
    if host is None:
        return tokens
    host.tokens = tokens
    return host
