"""An app that is its own authorization server (``MCP_AUTH_MODE=proxy``, the login at the test's
oidc-provider): a tool behind a scope, a tool that calls the provider with the user's upstream
token. With ``TEST_CIMD_CA`` set it is built from code (``McpApp(auth=OAuthProxy(...))``) and
trusts that CA for client metadata documents served on loopback."""

from __future__ import annotations

import os
import ssl
from typing import Any

import httpx

from mcpcore import Context, McpApp, tool
from mcpcore.auth.proxy import OAuthProxy, Upstream, upstream_token
from mcpcore.config import Settings


@tool(auth=["tools:read"])
async def whoami(ctx: Context) -> dict[str, Any]:
    """Who the server thinks the caller is."""
    assert ctx.auth is not None
    return {"subject": ctx.auth.subject, "tenant": ctx.tenant_id, "client": ctx.auth.client_id,
            "scopes": list(ctx.auth.scopes)}


@tool(auth=["tools:read"])
async def provider_profile(ctx: Context) -> dict[str, Any]:
    """The caller's profile as the upstream provider tells it, fetched with the upstream token."""
    token = await upstream_token(ctx)
    issuer = os.environ["OAUTH_UPSTREAM_ISSUER_URL"]
    async with httpx.AsyncClient() as http:
        resp = await http.get(f"{issuer}/me", headers={"authorization": f"Bearer {token}"})
    return {"status": resp.status_code, "sub": resp.json().get("sub")}


def _auth() -> OAuthProxy | None:
    ca = os.environ.get("TEST_CIMD_CA")
    if not ca:
        return None
    s = Settings.from_env(os.environ, auth_mode="none")
    secret = s.oauth_upstream_client_secret
    upstream = Upstream(issuer_url=s.oauth_upstream_issuer_url, client_id=s.oauth_upstream_client_id,
                        client_secret=secret.get_secret_value() if secret else None, scopes=s.oauth_upstream_scopes)
    key = s.auth_signing_key
    return OAuthProxy(public_url=s.public_url, signing_key=key.get_secret_value() if key else None, upstream=upstream,
                      cimd_allow_private=True, cimd_verify=ssl.create_default_context(cafile=ca),
                      server_name="proxied test server", access_ttl=s.oauth_proxy_access_ttl_s,
                      registrations_per_minute=s.oauth_proxy_registrations_per_minute)


app = McpApp("proxied", "1.0.0", tools=[whoami, provider_profile], auth=_auth())
