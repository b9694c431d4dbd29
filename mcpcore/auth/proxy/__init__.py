"""The OAuth authorization-server facade (``MCP_AUTH_MODE=proxy``): MCP clients register with
this server (client ID metadata documents, dynamic registration or configuration), the login is
delegated to an upstream OpenID Connect provider or GitHub, and this server issues its own
audience-bound tokens. See docs/auth.md."""

from __future__ import annotations

from typing import Any

from .server import WELL_KNOWN_AS, OAuthProxy
from .upstream import Identity, Upstream, UpstreamError
from .vault import UpstreamCredentials, upstream_token, upstream_tokens

__all__ = ["WELL_KNOWN_AS", "Identity", "OAuthProxy", "Upstream", "UpstreamCredentials", "UpstreamError",
           "find_proxy", "upstream_token", "upstream_tokens"]


def find_proxy(authenticator: Any) -> OAuthProxy | None:
    """The :class:`OAuthProxy` an app's authenticator is or wraps (behind DPoP or host identity)."""
    for _ in range(4):
        if isinstance(authenticator, OAuthProxy):
            return authenticator
        authenticator = getattr(authenticator, "tokens", None)
        if authenticator is None:
            return None
    return None
