"""A FastAPI app that authenticates its users itself (API keys in ``X-API-Key``, through
Starlette's ``AuthenticationMiddleware``) and mounts an mcpcore server at ``/mcp`` whose caller
is that user (``HostIdentity``): the host-identity tests, in process and under uvicorn.

Two users in two tenants: alice (acme) holds ``reports:admin``, bob (globex) does not."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, SimpleUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection

from mcpcore import Context, McpApp, Settings, tool
from mcpcore.auth import HostIdentity

KEYS = {"key-alice": ("alice", "acme", ["notes:write", "reports:admin"]),
        "key-bob": ("bob", "globex", ["notes:write"])}


class User(SimpleUser):
    """The host's user: a name and the tenant it belongs to."""

    def __init__(self, username: str, tenant_id: str) -> None:
        super().__init__(username)
        self.tenant_id = tenant_id


class ApiKeys(AuthenticationBackend):
    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, User] | None:
        key = conn.headers.get("x-api-key")
        if key is None:
            return None
        found = KEYS.get(key)
        if found is None:
            raise AuthenticationError("unknown API key")
        name, tenant, scopes = found
        return AuthCredentials(scopes), User(name, tenant)


@tool
async def whoami(ctx: Context) -> dict[str, Any]:
    """Who the server thinks is calling, and who the host app says it is."""
    assert ctx.auth is not None and ctx.http is not None
    host_user = ctx.http.scope["user"]
    return {"subject": ctx.auth.subject, "tenant": ctx.tenant_id, "scopes": list(ctx.auth.scopes),
            "client": ctx.auth.client_id, "host_user": host_user.display_name}


@tool(auth=["notes:write"])
async def note_put(text: str, ctx: Context) -> str:
    """Keep a note in the caller's tenant."""
    await ctx.state.set("note", text)
    return "kept"


@tool
async def note_get(ctx: Context) -> str | None:
    """The caller's tenant's note."""
    value = await ctx.state.get("note")
    return value if isinstance(value, str) else None


@tool(auth=["reports:admin"], visible_to=["reports:admin"])
async def admin_report(ctx: Context) -> str:
    """Only for report admins."""
    return f"report for {ctx.tenant_id}"


@tool(auth=["reports:admin"])
async def admin_count(ctx: Context) -> int:
    """Listed for everyone, callable by report admins only."""
    return 42


@tool(task="optional")
async def slow_echo(text: str, seconds: float = 0.0) -> str:
    """Echo, as a task when the client takes tasks."""
    await asyncio.sleep(seconds)
    return text


TOOLS = [whoami, note_put, note_get, admin_report, admin_count, slow_echo]


def build(settings: Settings | None = None) -> tuple[FastAPI, McpApp]:
    """The host app and the mcpcore app mounted in it, whose caller is the host's user."""
    mcp = McpApp("host-notes", "1.0.0", tools=TOOLS, settings=settings, auth=HostIdentity())
    api = FastAPI(lifespan=mcp.lifespan, middleware=[Middleware(AuthenticationMiddleware, backend=ApiKeys())])

    def current_user(request: Request) -> User:
        if not request.user.is_authenticated:
            raise HTTPException(status_code=401, detail="sign in")
        user: User = request.user
        return user

    @api.get("/me")
    async def me(user: User = Depends(current_user)) -> dict[str, str]:
        return {"user": user.identity, "tenant": user.tenant_id}

    api.mount("/mcp", mcp)
    return api, mcp


app, mcp = build()
