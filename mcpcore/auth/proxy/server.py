"""``MCP_AUTH_MODE=proxy`` / ``McpApp(auth=OAuthProxy(...))``: the app is the OAuth 2.1
authorization server its clients see, the login is delegated upstream, and the tokens it issues
are verified as ``MCP_AUTH_MODE=oauth`` verifies any issuer's (our own JWKS, in process).

Endpoints (below ``MCP_PUBLIC_URL``): ``/.well-known/oauth-authorization-server`` (RFC 8414),
``/oauth/authorize``, ``/oauth/callback`` (the upstream's redirect URI), ``/oauth/consent``,
``/oauth/token``, ``/oauth/register`` (RFC 7591), ``/oauth/revoke`` (RFC 7009), ``/oauth/jwks``.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ...asgi_types import Receive, Scope, Send
from ...context import AuthInfo
from ...errors import ConfigurationError
from ..dpop import DEFAULT_ALGS
from ..oauth import OAuthAuthenticator, check_url
from .clients import CimdResolver, parse_clients
from .core import ProxyCore
from .fetch import SafeFetcher
from .flow import authorize, callback, consent
from .grants import revoke, token
from .keys import ProxyKeys
from .register import register
from .store import MemoryProxyStore, ProxyStore, RedisProxyStore, StoreFull
from .upstream import Upstream
from .vault import active
from .web import Duplicate, TooLarge, params, read_body, send_json

if TYPE_CHECKING:
    import httpx

    from ...config import Settings

__all__ = ["WELL_KNOWN_AS", "OAuthProxy"]

log = logging.getLogger("mcpcore.auth")
WELL_KNOWN_AS = "/.well-known/oauth-authorization-server"
_GET = {"/oauth/authorize", "/oauth/callback", "/oauth/jwks"}
_POST = {"/oauth/token", "/oauth/register", "/oauth/revoke", "/oauth/consent"}
# What a browser page may call from another origin (MCP_CORS_ALLOWED_ORIGINS): not the pages a
# person is sent to (authorize, callback, consent), whose answers no other origin may read.
_CORS_POST = {"/oauth/token", "/oauth/register", "/oauth/revoke"}


class OAuthProxy:
    """The authorization-server facade (see the module docstring); also the app's authenticator.

    Args:
        public_url: ``MCP_PUBLIC_URL``: our issuer, and the base of every endpoint.
        signing_key: ``MCP_AUTH_SIGNING_KEY``: one or more comma-separated secrets (the first signs).
        upstream: the identity provider (:class:`~.upstream.Upstream`).
        endpoint_path: the MCP endpoint's path; the resource tokens are bound to is
            ``public_url + endpoint_path`` unless ``resource`` says otherwise.
        clients: pre-registered clients (``OAUTH_PROXY_CLIENTS``'s JSON, or a list of dicts).
        cimd_allow_private: the development allowance for client metadata URLs on private addresses.
        cimd_verify: TLS verification for client metadata fetches (a private CA in tests).
        server_name: the name the consent page shows (default: the app's title or name).

    Raises:
        ConfigurationError: a missing or malformed setting, naming it.
    """

    mode = "proxy"

    def __init__(self, *, public_url: str | None, signing_key: str | None, upstream: Upstream,
                 endpoint_path: str = "/mcp", resource: str | None = None,
                 clients: str | Sequence[Mapping[str, Any]] | None = None, cimd_allow_private: bool = False,
                 cimd_verify: ssl.SSLContext | bool = True, server_name: str | None = None, access_ttl: int = 3600,
                 refresh_ttl: int = 2_592_000, consent_ttl: int = 2_592_000, registrations_per_minute: int = 10,
                 max_registrations: int = 10_000) -> None:
        if not public_url:
            raise ConfigurationError("MCP_PUBLIC_URL is required when MCP_AUTH_MODE=proxy: it is the issuer of the "
                                     "tokens and the base of the authorization endpoints")
        issuer = check_url("MCP_PUBLIC_URL", public_url).rstrip("/")
        self.fetcher = SafeFetcher(allow_private=cimd_allow_private, verify=cimd_verify)
        self.core = ProxyCore(
            issuer=issuer, resource=resource or issuer + "/" + endpoint_path.strip("/"), server_name=server_name or "",
            keys=ProxyKeys.from_setting(signing_key), store=MemoryProxyStore(), upstream=upstream,
            cimd=CimdResolver(self.fetcher), configured=parse_clients(clients), access_ttl=access_ttl,
            refresh_ttl=refresh_ttl, consent_ttl=consent_ttl, registrations_per_minute=registrations_per_minute,
            max_registrations=max_registrations)
        self.verifier = OAuthAuthenticator(issuer=issuer, audience=self.core.resource, resource=self.core.resource,
                                           local_jwks=lambda: self.core.keys.jwks, cooldown=0.0)
        prefix = urlsplit(issuer).path.rstrip("/")
        self.paths = {WELL_KNOWN_AS, WELL_KNOWN_AS + prefix, *_GET, *_POST}

    @classmethod
    def from_settings(cls, settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None) -> OAuthProxy:
        """The facade ``MCP_AUTH_MODE=proxy`` and the ``OAUTH_UPSTREAM_*`` / ``OAUTH_PROXY_*`` settings describe."""
        secret = settings.oauth_upstream_client_secret
        key = settings.auth_signing_key
        upstream = Upstream(preset=settings.oauth_upstream_preset, issuer_url=settings.oauth_upstream_issuer_url,
                            client_id=settings.oauth_upstream_client_id,
                            client_secret=secret.get_secret_value() if secret is not None else None,
                            scopes=settings.oauth_upstream_scopes, tenant_claim=settings.oauth_upstream_tenant_claim,
                            transport=transport)
        return cls(public_url=settings.public_url, signing_key=key.get_secret_value() if key is not None else None,
                   upstream=upstream, endpoint_path=settings.endpoint_path,
                   resource=settings.server_resource_identifier, clients=settings.oauth_proxy_clients,
                   cimd_allow_private=settings.oauth_proxy_cimd_allow_private,
                   access_ttl=settings.oauth_proxy_access_ttl_s, refresh_ttl=settings.oauth_proxy_refresh_ttl_s,
                   consent_ttl=settings.oauth_proxy_consent_ttl_s,
                   registrations_per_minute=settings.oauth_proxy_registrations_per_minute,
                   max_registrations=settings.oauth_proxy_max_registrations)

    def __repr__(self) -> str:
        return f"OAuthProxy(issuer={self.issuer!r}, upstream={self.core.upstream!r})"

    @property
    def issuer(self) -> str:
        """Our issuer URL (``MCP_PUBLIC_URL`` without a trailing slash)."""
        return self.core.issuer

    @property
    def resource(self) -> str:
        """The resource our tokens are bound to (their ``aud``)."""
        return self.core.resource

    @property
    def store(self) -> ProxyStore:
        """Where the flows' state lives."""
        return self.core.store

    # -- Authenticator ----------------------------------------------------------------------------

    def share(self, redis: Any) -> None:
        """Keep the state in the app's Redis (called before :meth:`start` when the app has one)."""
        self.core.store = RedisProxyStore(redis)

    async def start(self) -> None:
        """Discover the upstream provider (a failure is logged; the first login retries it)."""
        active(self.issuer, self.core)
        await self.verifier.start()
        try:
            await self.core.upstream.discover()
        except Exception as e:  # an unreachable provider must not stop the server
            log.warning("the upstream identity provider could not be discovered at startup: %s", e)

    async def close(self) -> None:
        """Close the HTTP clients."""
        await self.verifier.close()
        await self.core.upstream.close()
        await self.fetcher.close()

    async def authenticate(self, authorization: str | None) -> AuthInfo:
        """Verify one of our access tokens (as ``MCP_AUTH_MODE=oauth`` would, with our JWKS)."""
        return await self.verifier.authenticate(authorization)

    # -- the endpoints ----------------------------------------------------------------------------

    def cors_methods(self, path: str) -> bytes | None:
        """The methods a browser-based client may use on ``path`` from an origin of
        ``MCP_CORS_ALLOWED_ORIGINS`` (the metadata, keys, token, registration and revocation
        endpoints), or ``None``: no CORS (the sign-in and consent pages)."""
        if path in _CORS_POST:
            return b"POST, OPTIONS"
        if path.startswith(WELL_KNOWN_AS) or path == "/oauth/jwks":
            return b"GET, HEAD, OPTIONS"
        return None

    def metadata(self, scopes: Iterable[str] = ()) -> dict[str, Any]:
        """The RFC 8414 document."""
        url = self.core.url
        return {
            "issuer": self.issuer, "authorization_endpoint": url("/oauth/authorize"),
            "token_endpoint": url("/oauth/token"), "registration_endpoint": url("/oauth/register"),
            "revocation_endpoint": url("/oauth/revoke"), "jwks_uri": url("/oauth/jwks"),
            "response_types_supported": ["code"], "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic",
                                                      "private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256", "ES256", "PS256", "EdDSA"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic",
                                                           "private_key_jwt"],
            "scopes_supported": sorted(set(scopes)),
            "client_id_metadata_document_supported": True,
            "dpop_signing_alg_values_supported": list(DEFAULT_ALGS),
            "authorization_response_iss_parameter_supported": True,
        }

    async def serve(self, scope: Scope, receive: Receive, send: Send, path: str, scopes: Iterable[str] = (),
                    server_name: str = "this server") -> None:
        """Answer one request to an endpoint of :attr:`paths`; ``scopes``: the app's declared
        scopes, ``server_name``: its name (when none was given here)."""
        self.core.server_name = self.core.server_name or server_name
        self.core.scopes = tuple(sorted(set(scopes)))
        method = scope["method"]
        log.info("authorization server: %s %s", method, path)
        if path.startswith(WELL_KNOWN_AS) or path == "/oauth/jwks":
            if method not in ("GET", "HEAD"):
                await send_json(send, 405, {"error": "invalid_request"}, [(b"allow", b"GET, HEAD")])
                return
            doc = self.metadata(scopes) if path != "/oauth/jwks" else {"keys": self.core.keys.jwks}
            await send_json(send, 200, doc)
            return
        allowed = "GET" if path in _GET else "POST"
        if method != allowed:
            await send_json(send, 405, {"error": "invalid_request", "error_description": f"use {allowed}"},
                            [(b"allow", allowed.encode())])
            return
        try:
            if allowed == "GET":
                await _by_query(self.core, scope, send, path)
            elif path == "/oauth/register":
                await register(self.core, scope, send, await read_body(receive))
            else:
                form = params((await read_body(receive)).decode("utf-8", "replace"))
                handler = {"/oauth/token": token, "/oauth/revoke": revoke, "/oauth/consent": consent}[path]
                await handler(self.core, scope, send, form)
        except TooLarge:
            await send_json(send, 413, {"error": "invalid_request", "error_description": "the body is too large"})
        except StoreFull:
            await send_json(send, 503, {"error": "temporarily_unavailable", "error_description": "try again later"},
                            [(b"retry-after", b"60")])
        except Duplicate as e:
            await send_json(send, 400, {"error": "invalid_request", "error_description": f"{e} is repeated"})


async def _by_query(core: ProxyCore, scope: Scope, send: Send, path: str) -> None:
    from .pages import error_page
    from .web import send_page

    try:
        q = params(scope.get("query_string", b"").decode("utf-8", "replace"))
    except Duplicate as e:
        await send_page(send, 400, error_page("bad_request", f"{e} is repeated."))
        return
    await (authorize if path == "/oauth/authorize" else callback)(core, scope, send, q)
