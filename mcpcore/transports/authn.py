"""Authentication at the door of every HTTP transport (streamable HTTP and the 2024 HTTP+SSE).

Every route that serves MCP messages goes through :func:`authenticate` before it reads a body,
and a refusal is answered the same way everywhere (:func:`refuse`): the status, the
``WWW-Authenticate`` challenge naming the protected-resource metadata, and the JSON-RPC body.
"""

from __future__ import annotations

from .. import _json
from ..asgi_types import Scope, Send
from ..auth import Authenticator, AuthError, metadata_url
from ..auth.base import authenticate_scope
from ..config import Settings
from ..context import AuthInfo
from ..runtime import Runtime
from .exchange import json_response

__all__ = ["Identity", "authenticate", "identity_of", "refuse", "tenant_of"]

Identity = tuple[str, str, str]
"""``(tenant, client id, subject)``: the principal a session or connection is bound to."""


async def authenticate(authenticator: Authenticator | None, scope: Scope) -> AuthInfo | None:
    """The caller's verified identity; ``None`` when the app has no auth. An authenticator that
    reads the whole request (``authenticate_request``: the host's user, DPoP) is given it; any
    other, the request's one ``Authorization`` header (and its source address, to one that bounds
    its work per source).

    Raises:
        AuthError: no token, a bad one, or the verifier is unavailable.
    """
    if authenticator is None:
        return None
    return await authenticate_scope(authenticator, scope)


def identity_of(auth: AuthInfo | None) -> Identity | None:
    """What a session or connection is bound to (``None`` without auth)."""
    return (auth.tenant_id or "", auth.client_id, auth.subject or "") if auth is not None else None


def tenant_of(rt: Runtime, auth: AuthInfo | None) -> str | None:
    """``default`` without auth; with auth the token's ``tid``, or ``None`` (``ctx.state`` then
    fails closed): an authenticated server never falls back to the shared default tenant."""
    if auth is not None:
        return auth.tenant_id
    return "default" if rt.auth is None else None


def base_url(scope: Scope, host: str | None) -> str:
    """The request's base URL (``MCP_PUBLIC_URL`` wins where it is set, by the callers)."""
    server = scope.get("server")
    h = host or (f"{server[0]}:{server[1]}" if server else "localhost")
    return f"{scope.get('scheme', 'http')}://{h}{scope.get('root_path', '')}"


async def refuse(settings: Settings, scope: Scope, send: Send, host: str | None, exc: AuthError) -> None:
    """Answer an authentication failure: status, challenge, JSON-RPC error body. The challenge
    names the protected-resource metadata, except under host identity alone (no token to get)."""
    urls = None if settings.auth_mode == "host" else metadata_url(settings, base_url(scope, host),
                                                                    settings.endpoint_path).challenge
    extra = [(k.lower().encode(), v.encode()) for k, v in exc.headers(urls, include_scope=False).items()]
    await json_response(send, exc.status, _json.dumps(exc.response_body(None)), extra)
