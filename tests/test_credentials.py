"""Outgoing credential policies (mcpcore.credentials): a tool calls a backend API (a real ASGI
app, reached through httpx) under each policy, through a real McpApp with JWT callers; the
delegated policy exchanges tokens at the real authorization server (oidc-provider). The caller's
token never leaves by default, a configured secret never shows in repr, describe() or logs, and a
refused credential is a tool error before any request is sent."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import jwt
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpcore import ConfigurationError, Context, McpApp, Settings, tool
from mcpcore.auth.delegation import Audience, Delegation
from mcpcore.auth.token_exchange import TokenExchange
from mcpcore.credentials import (
    CallerToken,
    CredentialPolicy,
    DelegatedToken,
    NoCredentials,
    StaticHeader,
    credentials_from_config,
)
from mcpcore.testing import McpTestClient
from tests.auth.provider import SUBJECT_SECRET, Provider, run_provider

pytestmark = pytest.mark.anyio
ERROR_META = "dev.mcpcore/error"
API = "https://api.example"
BILLING = "https://billing.example"


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    """A real authorization server (oidc-provider) doing RFC 8693 token exchange."""
    with run_provider() as p:
        yield p


def caller_token(sub: str = "alice", **claims: Any) -> str:
    return jwt.encode({"sub": sub, "cid": "desktop", "tid": "acme", "exp": int(time.time()) + 300, **claims},
                      SUBJECT_SECRET)


class Backend:
    """The API behind the tools: records the headers of every request it gets."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        self.app = Starlette(routes=[Route("/echo", self.echo)])

    async def echo(self, request: Request) -> JSONResponse:
        self.seen.append(dict(request.headers))
        return JSONResponse({"authorization": request.headers.get("authorization"),
                             "api_key": request.headers.get("x-api-key")})


def app_with(policy: CredentialPolicy, backend: Backend, *, default_headers: dict[str, str] | None = None,
             delegation: Delegation | None = None) -> McpApp:
    @tool
    async def backend_call(ctx: Context) -> dict[str, Any]:
        """Call the backend with the policy's credential."""
        auth = await policy.auth(ctx)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(backend.app), base_url="http://backend",
                                     headers=default_headers) as http:
            return dict((await http.get("/echo", auth=auth)).json())

    return McpApp("creds", tools=[backend_call], delegation=delegation,
                  settings=Settings.from_env({"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SUBJECT_SECRET}))


async def call(app: McpApp, token: str) -> dict[str, Any]:
    async with McpTestClient(app, era="modern", headers={"authorization": f"Bearer {token}"}) as c:
        return dict(await c.call_tool("backend_call"))


def failure(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"], result
    return dict(result["_meta"][ERROR_META])


async def test_by_default_nothing_is_sent_and_never_the_callers_token() -> None:
    backend = Backend()
    token = caller_token(aud=API)
    got = (await call(app_with(NoCredentials(), backend), token))["structuredContent"]
    assert got == {"authorization": None, "api_key": None}
    assert all(token not in str(h) for h in backend.seen)
    client_default = {"authorization": "Basic c2VydmljZTpwdw=="}  # the user's own client configuration
    kept = (await call(app_with(NoCredentials(), backend, default_headers=client_default), token))
    assert kept["structuredContent"]["authorization"] == "Basic c2VydmljZTpwdw=="
    stripped = await call(app_with(NoCredentials(strip=True), backend, default_headers=client_default), token)
    assert stripped["structuredContent"]["authorization"] is None
    assert NoCredentials().describe() == "none" and isinstance(NoCredentials(), CredentialPolicy)


async def test_a_static_header_from_the_environment_is_sent_and_never_shown(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    secret = "sk-live-5f1b9e0c7d"
    monkeypatch.setenv("BACKEND_API_KEY", secret)
    backend = Backend()
    policy = StaticHeader("X-Api-Key", env="BACKEND_API_KEY")
    caplog.set_level(logging.DEBUG)
    got = (await call(app_with(policy, backend), caller_token()))["structuredContent"]
    assert got == {"authorization": None, "api_key": secret}
    literal = StaticHeader("Authorization", "abc123", prefix="token ")
    assert (await call(app_with(literal, backend), caller_token()))["structuredContent"]["authorization"] == \
        "token abc123"
    for shown in (repr(policy), policy.describe(), repr(literal), literal.describe(), repr(await literal.auth(None)),
                  caplog.text):
        assert secret not in shown and "abc123" not in shown
    monkeypatch.setenv("BACKEND_API_KEY", "sk-rotated")  # read at each call: a rotated secret applies
    assert (await call(app_with(policy, backend), caller_token()))["structuredContent"]["api_key"] == "sk-rotated"
    monkeypatch.delenv("BACKEND_API_KEY")
    before = len(backend.seen)
    missing = failure(await call(app_with(policy, backend), caller_token()))
    assert missing["data"]["reason"] == "credential_missing" and "BACKEND_API_KEY" in missing["message"]
    assert missing["data"]["recovery"]["hint"] and len(backend.seen) == before
    with pytest.raises(ConfigurationError, match="exactly one"):
        StaticHeader("X-Api-Key")
    with pytest.raises(ConfigurationError, match="exactly one"):
        StaticHeader("X-Api-Key", "v", env="V")
    with pytest.raises(ConfigurationError, match="not a header name"):
        StaticHeader("X Api: Key", "v")


async def test_the_callers_token_only_for_its_own_audience() -> None:
    backend = Backend()
    policy = CallerToken(audience=API)
    ours = caller_token(aud=[API, "https://other.example"])
    got = (await call(app_with(policy, backend), ours))["structuredContent"]
    assert got["authorization"] == f"Bearer {ours}"
    assert (await call(app_with(CallerToken(API + "/"), backend), ours))["structuredContent"]["authorization"]
    before = len(backend.seen)
    cases: list[tuple[str, str]] = [
        (caller_token(aud="https://other.example"), "credential_wrong_audience"),
        (caller_token(), "credential_wrong_audience"),  # a token that names no audience is not forwarded
        (caller_token(aud=API, cnf={"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiGQA4I"}), "credential_bound_token"),
    ]
    for token, reason in cases:
        refused = failure(await call(app_with(policy, backend), token))
        assert refused["data"]["reason"] == reason and refused["data"]["recovery"]["hint"], refused
        assert token not in str(refused)
    assert len(backend.seen) == before  # nothing left for a refused token
    with pytest.raises(ConfigurationError, match="audience"):
        CallerToken("")
    assert policy.describe() == f"the caller's token (audience {API})"
    with pytest.raises(Exception, match="presented none") as no_token:
        await policy.auth(None)
    assert getattr(no_token.value, "data", {})["reason"] == "credential_no_token"


def delegation(provider: Provider) -> Delegation:
    exchange = TokenExchange(provider.token_endpoint, client_id="mcp-server", client_secret="mcp-server-secret")
    return Delegation(exchange, {"billing": Audience(BILLING, scopes=("invoices:read",))})


async def test_a_delegated_token_is_exchanged_per_caller(provider: Provider) -> None:
    provider.set_exchange_ttl(300)
    backend = Backend()
    app = app_with(DelegatedToken("billing"), backend, delegation=delegation(provider))
    alice, bob = caller_token("alice", aud=API), caller_token("bob", aud=API)
    before = provider.stats()["exchanges"]
    seen: dict[str, dict[str, Any]] = {}
    keys = httpx.get(provider.jwks_uri).json()["keys"]
    for name, token in (("alice", alice), ("bob", bob)):
        header = (await call(app, token))["structuredContent"]["authorization"]
        assert header.startswith("Bearer ") and token not in header
        seen[name] = jwt.decode(header.removeprefix("Bearer "), jwt.PyJWK(keys[0]), algorithms=["ES256"],
                                audience=BILLING, issuer=provider.issuer)
    assert seen["alice"]["sub"] == "alice" and seen["bob"]["sub"] == "bob"
    assert seen["alice"]["scope"] == "invoices:read"
    assert provider.stats()["exchanges"] == before + 2
    assert all(alice not in str(h) and bob not in str(h) for h in backend.seen)
    before_requests = len(backend.seen)
    unknown = failure(await call(app_with(DelegatedToken("crm"), backend, delegation=delegation(provider)), alice))
    assert unknown["data"]["reason"] == "delegation_unknown_audience"
    unconfigured = failure(await call(app_with(DelegatedToken("billing"), backend), alice))
    assert unconfigured["data"]["reason"] == "delegation_not_configured"
    assert len(backend.seen) == before_requests
    assert DelegatedToken("billing").describe() == "delegated token for billing"


@pytest.mark.parametrize(("text", "check"), [
    ("", lambda p: isinstance(p, NoCredentials)),
    ("none", lambda p: isinstance(p, NoCredentials)),
    ("delegated:billing", lambda p: isinstance(p, DelegatedToken) and p.audience == "billing"),
    ("caller:https://api.example", lambda p: isinstance(p, CallerToken) and p.audience == API),
    ("header:X-Api-Key=env:KEY", lambda p: isinstance(p, StaticHeader) and (p.name, p.env, p.prefix) ==
     ("X-Api-Key", "KEY", "")),
    ("header:Authorization=Bearer env:API_TOKEN", lambda p: isinstance(p, StaticHeader) and
     (p.name, p.env, p.prefix) == ("Authorization", "API_TOKEN", "Bearer ")),
])
def test_the_configuration_form(text: str, check: Callable[[object], bool]) -> None:
    assert check(credentials_from_config(text))


@pytest.mark.parametrize("text", ["header:X-Api-Key=sk-literal", "passthrough", "delegated:", "header:=env:X"])
def test_configuration_refuses_other_forms_without_echoing_secrets(text: str) -> None:
    with pytest.raises(ConfigurationError, match="expected none") as refused:
        credentials_from_config(text)
    assert "sk-literal" not in str(refused.value)


async def test_openapi_tools_carry_the_policys_credential(provider: Provider) -> None:
    """A tool generated from an OpenAPI document sends the delegated token of its caller, and
    nothing of the caller's own (mcpcore.openapi takes the same policies)."""
    from mcpcore.openapi import ALL, openapi_tools
    from mcpcore.openapi.call import AppTransport

    provider.set_exchange_ttl(300)
    backend = Backend()
    document = {"openapi": "3.1.0", "info": {"title": "billing", "version": "1"}, "paths": {"/echo": {"get": {
        "operationId": "billing_echo", "summary": "What the billing API received",
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}}}}}
    client = httpx.AsyncClient(transport=AppTransport(backend.app), base_url="https://billing.example")
    tools = openapi_tools(document, client=client, routes=ALL, credentials=DelegatedToken("billing"))
    app = McpApp("gen", tools=tools, delegation=delegation(provider),
                 settings=Settings.from_env({"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SUBJECT_SECRET}))
    alice = caller_token("alice", aud=API)
    async with McpTestClient(app, era="modern", headers={"authorization": f"Bearer {alice}"}) as c:
        header = (await c.call_tool("billing_echo", {}))["structuredContent"]["authorization"]
    keys = httpx.get(provider.jwks_uri).json()["keys"]
    claims = jwt.decode(header.removeprefix("Bearer "), jwt.PyJWK(keys[0]), algorithms=["ES256"], audience=BILLING,
                        issuer=provider.issuer)
    assert claims["sub"] == "alice" and alice not in str(backend.seen)
    plain = openapi_tools(document, client=client, routes=ALL)  # the default: nothing
    app2 = McpApp("plain", tools=plain,
                  settings=Settings.from_env({"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SUBJECT_SECRET}))
    async with McpTestClient(app2, era="modern", headers={"authorization": f"Bearer {alice}"}) as c:
        assert (await c.call_tool("billing_echo", {}))["structuredContent"]["authorization"] is None
