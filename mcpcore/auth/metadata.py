"""RFC 9728 OAuth 2.0 Protected Resource Metadata, and the URLs it is served at.

Served (by the transport) only when ``MCP_AUTH_MODE`` is not ``none``, unauthenticated, with
``Cache-Control: public, max-age=3600`` (:data:`PRM_CACHE_CONTROL`), at every path of
:func:`metadata_routes`: the root form ``/.well-known/oauth-protected-resource`` and the
path-suffixed form ``/.well-known/oauth-protected-resource/mcp`` (RFC 9728 §3.1 inserts the
well-known segment between host and path; MCP clients try the suffixed form first).

The public origin comes from ``MCP_PUBLIC_URL`` when set (deployments behind a proxy), else from the
request's base URL. The latter is built from the ``Host`` header, so production deployments with
auth should set ``MCP_PUBLIC_URL`` (or restrict ``MCP_ALLOWED_HOSTS``).

Contents:

- ``resource``: ``MCP_SERVER_RESOURCE_IDENTIFIER``, else the public base + endpoint path.
- ``authorization_servers``: ``[OAUTH_ISSUER_URL]`` in oauth mode; absent in jwt mode (no
  authorization server exists there: tokens are minted with the shared secret).
- ``bearer_methods_supported``: ``["header"]`` (tokens in query strings or bodies are never read).
- ``scopes_supported``: the sorted union of the scopes declared by definitions, when any.
- ``dpop_signing_alg_values_supported`` (``MCP_AUTH_DPOP`` on) and
  ``dpop_bound_access_tokens_required: true`` (``MCP_AUTH_DPOP=required``), RFC 9728 §2.

Under host identity alone (``MCP_AUTH_MODE`` resolved to ``host``) there is no token to get, so
no document is served.

``resource_signing_alg_values_supported`` is deliberately **not** emitted: RFC 9728 §2 defines it as
the algorithms the resource uses to sign its *responses*, which this server does not do; listing the
token algorithms (RS256/ES256/PS256) there would be a false statement.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from ..config import Settings

__all__ = [
    "PRM_CACHE_CONTROL",
    "WELL_KNOWN_PRM",
    "MetadataUrls",
    "metadata_routes",
    "metadata_url",
    "protected_resource_metadata",
    "resource_identifier",
]

WELL_KNOWN_PRM = "/.well-known/oauth-protected-resource"
PRM_CACHE_CONTROL = "public, max-age=3600"


@dataclass(frozen=True, slots=True)
class MetadataUrls:
    """Absolute URLs of the metadata document."""

    root: str
    """``https://host/.well-known/oauth-protected-resource``."""
    path_suffixed: str
    """``https://host/.well-known/oauth-protected-resource/mcp``: the one ``WWW-Authenticate`` names."""

    @property
    def challenge(self) -> str:
        """The URL for ``resource_metadata=`` in a ``WWW-Authenticate`` challenge."""
        return self.path_suffixed


def _split_base(settings: Settings, request_base_url: str) -> tuple[str, str]:
    """``(origin, path prefix without trailing slash)`` of the public base URL."""
    base = settings.public_url or request_base_url
    parts = urlsplit(base.strip())
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
    return origin, parts.path.rstrip("/")


def _endpoint(settings: Settings, endpoint_path: str | None) -> str:
    path = endpoint_path if endpoint_path is not None else settings.endpoint_path
    path = "/" + path.strip("/") if path.strip("/") else ""
    return path


def resource_identifier(settings: Settings, request_base_url: str, endpoint_path: str | None = None) -> str:
    """``MCP_SERVER_RESOURCE_IDENTIFIER``, else ``MCP_PUBLIC_URL`` + endpoint, else request base + endpoint."""
    if settings.server_resource_identifier:
        return settings.server_resource_identifier
    origin, prefix = _split_base(settings, request_base_url)
    return origin + prefix + (_endpoint(settings, endpoint_path) or "/")


def metadata_url(settings: Settings, request_base_url: str, endpoint_path: str | None = None) -> MetadataUrls:
    """Both absolute URLs of the metadata document for this server.

    ``request_base_url`` is the request's base (Starlette ``str(request.base_url)``), used only when
    ``MCP_PUBLIC_URL`` is unset; ``endpoint_path`` defaults to ``MCP_HTTP_ENDPOINT_PATH``.
    """
    origin, prefix = _split_base(settings, request_base_url)
    return MetadataUrls(root=origin + WELL_KNOWN_PRM,
                        path_suffixed=origin + WELL_KNOWN_PRM + prefix + _endpoint(settings, endpoint_path))


def metadata_routes(settings: Settings, endpoint_path: str | None = None) -> tuple[str, ...]:
    """The local paths to serve the document at; empty when auth is off.

    The root form, the path-suffixed form, and (when ``MCP_PUBLIC_URL`` has a path prefix that a
    proxy may forward unchanged) the prefixed suffixed form.
    """
    if settings.auth_mode in ("none", "host"):
        return ()
    endpoint = _endpoint(settings, endpoint_path)
    routes = [WELL_KNOWN_PRM, WELL_KNOWN_PRM + endpoint]
    if settings.public_url:
        prefix = urlsplit(settings.public_url.strip()).path.rstrip("/")
        routes.append(WELL_KNOWN_PRM + prefix + endpoint)
    return tuple(dict.fromkeys(routes))


def protected_resource_metadata(
    settings: Settings,
    request_base_url: str,
    scopes_supported: Iterable[str] = (),
    *,
    endpoint_path: str | None = None,
) -> dict[str, Any]:
    """The RFC 9728 document (see the module docstring for each field).

    ``scopes_supported``: every scope declared by the server's definitions (``auth=[...]``), in any
    order, duplicates allowed.
    """
    doc: dict[str, Any] = {"resource": resource_identifier(settings, request_base_url, endpoint_path)}
    if settings.auth_mode in ("oauth", "introspection") and settings.oauth_issuer_url:
        doc["authorization_servers"] = [settings.oauth_issuer_url]
    doc["bearer_methods_supported"] = ["header"]
    scopes = sorted({s for s in scopes_supported if isinstance(s, str) and s})
    if scopes:
        doc["scopes_supported"] = scopes
    if settings.auth_dpop != "off":
        from .dpop import DEFAULT_ALGS

        doc["dpop_signing_alg_values_supported"] = list(settings.auth_dpop_algs or DEFAULT_ALGS)
        if settings.auth_dpop == "required":
            doc["dpop_bound_access_tokens_required"] = True
    return doc
