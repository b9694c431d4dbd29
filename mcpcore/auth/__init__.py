"""Bearer-token authentication for the HTTP transport: jwt (HS256, shared secret) and oauth (JWKS).

A library with a narrow interface; the transport wires it in:

- startup: ``auth = create_authenticator(settings)`` (``None`` when ``MCP_AUTH_MODE=none``), then
  ``await auth.start()``; shutdown: ``await auth.close()``;
- per protected request: ``info = await auth.authenticate(authorization_header)`` → ``ctx.auth``
  (and ``info.tenant_id`` → ``ctx.tenant_id``); an :class:`AuthError` becomes the HTTP response
  (``status``, ``headers(resource_metadata_url)``, ``response_body()``);
- scopes: :func:`check_scopes`;
- RFC 9728 metadata: :func:`protected_resource_metadata` at :func:`metadata_routes`, URL for
  challenges from :func:`metadata_url`;
- your own verification: a :class:`TokenVerifier` (``McpApp(auth=...)``); RFC 7662 introspection:
  :class:`IntrospectionVerifier` (``MCP_AUTH_MODE=introspection``);
- the host app's user as the caller: :class:`HostIdentity` (``McpApp(auth=HostIdentity(...))`` or
  ``MCP_AUTH_HOST_IDENTITY``), composing with the token modes;
- DPoP-bound tokens (RFC 9449, ``MCP_AUTH_DPOP``): :class:`DPoPGuard` around the token authenticator;
- delegated calls downstream (RFC 8693 token exchange): :mod:`mcpcore.auth.delegation`;
- this server as the OAuth authorization server, the login upstream (``MCP_AUTH_MODE=proxy``):
  :class:`OAuthProxy` with an :class:`Upstream`, the provider's tokens by :func:`upstream_token`.

Every signature check is PyJWT's (``jwt.decode`` with explicit ``algorithms``); nothing here
verifies a signature by hand.

PyJWT, cryptography and httpx are imported with the first authenticator (or the first use of
:class:`JwtAuthenticator`, :class:`OAuthAuthenticator` or ``MIN_SECRET_LENGTH``), so an app with
``MCP_AUTH_MODE=none`` never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import MAX_TOKEN_BYTES, Authenticator, parse_bearer, single_authorization
from .claims import TENANT_ID_MAX_LENGTH, auth_info_from_claims, is_valid_tenant_id, scopes_from_claims
from .errors import AuthError, AuthErrorCode, AuthStatus
from .factory import app_authenticator, create_authenticator
from .host import Caller, HostIdentity
from .metadata import (
    PRM_CACHE_CONTROL,
    WELL_KNOWN_PRM,
    MetadataUrls,
    metadata_routes,
    metadata_url,
    protected_resource_metadata,
    resource_identifier,
)
from .scopes import HasAuth, check_scopes, has_scopes
from .verifier import TokenVerifier, VerifierAuthenticator

if TYPE_CHECKING:
    from .delegation import (
        Audience,
        Delegation,
        DelegationFailed,
        DownstreamToken,
        delegated_auth,
        delegated_token,
        token_for,
    )
    from .dpop import jwk_thumbprint
    from .dpop_guard import DPoPGuard
    from .introspection import IntrospectionVerifier
    from .jwt_auth import MIN_SECRET_LENGTH, JwtAuthenticator
    from .oauth import OAuthAuthenticator
    from .proxy import OAuthProxy, Upstream, UpstreamCredentials, upstream_token
    from .token_exchange import TokenExchange

__all__ = [
    "MAX_TOKEN_BYTES",
    "MIN_SECRET_LENGTH",
    "PRM_CACHE_CONTROL",
    "TENANT_ID_MAX_LENGTH",
    "WELL_KNOWN_PRM",
    "Audience",
    "AuthError",
    "AuthErrorCode",
    "AuthStatus",
    "Authenticator",
    "Caller",
    "DPoPGuard",
    "Delegation",
    "DelegationFailed",
    "DownstreamToken",
    "HasAuth",
    "HostIdentity",
    "IntrospectionVerifier",
    "JwtAuthenticator",
    "MetadataUrls",
    "OAuthAuthenticator",
    "OAuthProxy",
    "TokenExchange",
    "TokenVerifier",
    "Upstream",
    "UpstreamCredentials",
    "VerifierAuthenticator",
    "app_authenticator",
    "auth_info_from_claims",
    "check_scopes",
    "create_authenticator",
    "delegated_auth",
    "delegated_token",
    "has_scopes",
    "is_valid_tenant_id",
    "jwk_thumbprint",
    "metadata_routes",
    "metadata_url",
    "parse_bearer",
    "protected_resource_metadata",
    "resource_identifier",
    "scopes_from_claims",
    "single_authorization",
    "token_for",
    "upstream_token",
]

_LAZY = {"MIN_SECRET_LENGTH": "jwt_auth", "JwtAuthenticator": "jwt_auth", "OAuthAuthenticator": "oauth",
         "IntrospectionVerifier": "introspection", "DPoPGuard": "dpop_guard", "jwk_thumbprint": "dpop",
         "TokenExchange": "token_exchange",
         **dict.fromkeys(("OAuthProxy", "Upstream", "UpstreamCredentials", "upstream_token"), "proxy"),
         **dict.fromkeys(
             ("Audience", "Delegation", "DelegationFailed", "DownstreamToken", "delegated_auth", "delegated_token",
              "token_for"), "delegation")}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
