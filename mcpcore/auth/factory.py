"""``create_authenticator(settings)``: the authenticator for ``MCP_AUTH_MODE``, validated at startup."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import ConfigurationError
from .base import Authenticator

if TYPE_CHECKING:
    import httpx

    from ..config import Settings

__all__ = ["create_authenticator"]

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
    else:
        raise ConfigurationError(f"MCP_AUTH_MODE must be one of none, jwt, oauth, introspection; got {mode!r}")
    if settings.auth_disable_scope_checks:
        log.warning("MCP_AUTH_DISABLE_SCOPE_CHECKS=true: tokens are verified but declared and runtime scope "
                    "checks are skipped; never use this in production")
    if not settings.public_url and not settings.server_resource_identifier:
        log.warning("auth is on without MCP_PUBLIC_URL: the protected-resource metadata and WWW-Authenticate "
                    "URLs are derived from each request's Host header")
    return auth
