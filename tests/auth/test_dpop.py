"""DPoP (RFC 9449) at the resource server: proofs made by joserfc, tokens from PyJWT (jwt mode),
from a real authorization server (oidc-provider: a DPoP-bound JWT in oauth mode, an opaque token
in introspection mode) and from a TokenVerifier. Every refusal answers its challenge."""

from __future__ import annotations

import time
from typing import Any

import httpx
import jwt
import pytest

from mcpcore import AuthInfo, ConfigurationError, Context, McpApp, Settings, tool
from mcpcore.auth import jwk_thumbprint
from mcpcore.auth.dpop import normalize_url
from mcpcore.testing import McpTestClient
from tests.auth.dpop_client import DPoPAuth, DPoPKey
from tests.auth.provider import Provider

pytestmark = pytest.mark.anyio
SECRET = "d" * 40
URL = "http://127.0.0.1:8000/mcp"
NONCE_KEY = "n" * 40


@tool
async def whoami(ctx: Context) -> dict[str, Any]:
    """The caller and the key its token is bound to."""
    assert ctx.auth is not None
    cnf = ctx.auth.claims.get("cnf") or {}
    return {"client": ctx.auth.client_id, "subject": ctx.auth.subject, "jkt": cnf.get("jkt")}


def dpop_app(dpop: str = "required", **env: str) -> McpApp:
    return McpApp("dpop", tools=[whoami], settings=Settings.from_env(
        {"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SECRET, "MCP_AUTH_DPOP": dpop, **env}))


def token(key: DPoPKey | None = None, **claims: Any) -> str:
    payload = {"sub": "alice", "cid": "app", "tid": "acme", "exp": int(time.time()) + 300, **claims}
    if key is not None:
        payload["cnf"] = {"jkt": key.jkt}
    return jwt.encode(payload, SECRET, algorithm="HS256")


async def send(c: McpTestClient, tok: str, proof: str | None = None, scheme: str = "DPoP",
               extra: list[tuple[str, str]] = ()) -> httpx.Response:  # type: ignore[assignment]
    params = c.envelope({"name": "whoami", "arguments": {}})
    headers = [*c.headers("tools/call", params).items(), ("authorization", f"{scheme} {tok}")]
    if proof is not None:
        headers.append(("dpop", proof))
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return await c.http.post(c.url, json=body, headers=[*headers, *extra])


def challenge(r: httpx.Response) -> str:
    return r.headers.get("www-authenticate", "")


async def test_a_valid_proof_and_each_bad_one() -> None:
    key, other = DPoPKey(), DPoPKey()
    bound = token(key)
    async with McpTestClient(dpop_app(), era="modern") as c:
        ok = await send(c, bound, key.proof("POST", URL, bound))
        assert ok.status_code == 200, ok.text
        assert ok.json()["result"]["structuredContent"] == {"client": "app", "subject": "alice", "jkt": key.jkt}
        bad_proofs = {
            "wrong htu": key.proof("POST", "http://127.0.0.1:8000/other", bound),
            "wrong host": key.proof("POST", "https://mcp.example.com/mcp", bound),
            "wrong htm": key.proof("GET", URL, bound),
            "stale iat": key.proof("POST", URL, bound, iat=time.time() - 600),
            "future iat": key.proof("POST", URL, bound, iat=time.time() + 600),
            "ath of another token": key.proof("POST", URL, token(key, sub="mallory")),
            "no ath": key.proof("POST", URL, None),
            "typ": key.proof("POST", URL, bound, typ="JWT"),
            "private key": key.proof("POST", URL, bound, jwk=key.key.as_dict(private=True)),
            "signed by another key": key.proof("POST", URL, bound, jwk=other.key.as_dict(private=False)),
            "not a jwt": "not-a-proof",
        }
        for name, proof in bad_proofs.items():
            r = await send(c, bound, proof)
            assert r.status_code == 401, name
            assert challenge(r).startswith("DPoP ") and 'error="invalid_dpop_proof"' in challenge(r), name
            assert 'algs="ES256' in challenge(r) and "resource_metadata=" in challenge(r), name
            assert r.json()["error"]["code"] == -32006
        r = await send(c, bound, None)
        assert r.status_code == 401 and 'error="invalid_dpop_proof"' in challenge(r)
        two = [("dpop", key.proof("POST", URL, bound))]
        r = await send(c, bound, key.proof("POST", URL, bound), extra=two)
        assert r.status_code == 401 and 'error_description="More than one DPoP proof."' in challenge(r)
        # a proof for another key than the token's
        r = await send(c, bound, other.proof("POST", URL, bound))
        assert r.status_code == 401 and 'DPoP realm="mcp", error="invalid_token"' in challenge(r)
        assert "Invalid DPoP key binding" in challenge(r)
        # a token bound to no key at all
        unbound = token()
        r = await send(c, unbound, key.proof("POST", URL, unbound))
        assert r.status_code == 401 and 'error="invalid_token"' in challenge(r) and "not bound" in challenge(r)
        # replayed on the same instance
        proof = key.proof("POST", URL, bound)
        assert (await send(c, bound, proof)).status_code == 200
        r = await send(c, bound, proof)
        assert r.status_code == 401 and "already used" in challenge(r)
        # required: the Bearer scheme is not accepted, bound or not
        for tok in (bound, unbound):
            r = await send(c, tok, None, scheme="Bearer")
            assert r.status_code == 401 and challenge(r).startswith("DPoP realm=") and "error=" not in challenge(r)
            assert "Bearer" not in challenge(r)


async def test_a_proof_replayed_on_another_instance_is_refused(redis_url: str) -> None:
    env = {"MCP_SESSION_STORE": "redis", "REDIS_URL": redis_url}
    key = DPoPKey()
    bound = token(key)
    one, two = dpop_app(**env), dpop_app(**env)
    async with McpTestClient(one, era="modern") as a, McpTestClient(two, era="modern") as b:
        proof = key.proof("POST", URL, bound)
        assert (await send(a, bound, proof)).status_code == 200
        r = await send(b, bound, proof)
        assert r.status_code == 401 and 'error="invalid_dpop_proof"' in challenge(r) and "already used" in challenge(r)
        fresh = key.proof("POST", URL, bound)
        assert (await send(b, bound, fresh)).status_code == 200


async def test_allowed_serves_bearer_tokens_and_refuses_a_bound_one_as_bearer() -> None:
    key = DPoPKey("RSA")
    async with McpTestClient(dpop_app("allowed"), era="modern") as c:
        assert (await send(c, token(), scheme="Bearer")).status_code == 200
        r = await send(c, token(key), scheme="Bearer")
        assert r.status_code == 401
        assert challenge(r).startswith('Bearer realm="mcp", error="invalid_token"') and ', DPoP realm="mcp", algs="' \
            in challenge(r)
        bound = token(key)
        assert (await send(c, bound, key.proof("POST", URL, bound))).status_code == 200
        r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, c.headers())
        assert r.status_code == 401 and challenge(r).startswith('Bearer realm="mcp", resource_metadata=')
        assert 'DPoP realm="mcp", algs="ES256 ES384' in challenge(r)
        r = await send(c, bound, key.proof("GET", URL, bound))
        assert challenge(r).startswith("DPoP ") and challenge(r).endswith(', Bearer realm="mcp"')


async def test_server_nonces() -> None:
    key = DPoPKey("OKP")
    bound = token(key)
    async with McpTestClient(dpop_app(MCP_AUTH_DPOP_NONCE_KEY=NONCE_KEY), era="modern") as c:
        r = await send(c, bound, key.proof("POST", URL, bound))
        assert r.status_code == 401 and 'error="use_dpop_nonce"' in challenge(r)
        nonce = r.headers["dpop-nonce"]
        r = await send(c, bound, key.proof("POST", URL, bound, nonce="forged"))
        assert r.status_code == 401 and r.headers["dpop-nonce"] == nonce
        r = await send(c, bound, key.proof("POST", URL, bound, nonce=nonce))
        assert r.status_code == 200 and r.headers["dpop-nonce"] == nonce
    async with McpTestClient(dpop_app(MCP_AUTH_DPOP_NONCE_KEY=NONCE_KEY), era="modern") as c:  # another instance
        assert (await send(c, bound, key.proof("POST", URL, bound, nonce=nonce))).status_code == 200


async def test_the_metadata_says_dpop() -> None:
    for mode, required in (("allowed", None), ("required", True)):
        async with McpTestClient(dpop_app(mode, MCP_AUTH_DPOP_ALGS="ES256,EdDSA"), era="modern") as c:
            doc = (await c.http.get("http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp")).json()
            assert doc["dpop_signing_alg_values_supported"] == ["ES256", "EdDSA"]
            assert doc.get("dpop_bound_access_tokens_required") is required
            key = DPoPKey("RSA")
            bound = token(key)
            r = await send(c, bound, key.proof("POST", URL, bound))
            assert r.status_code == 401 and "algorithm is not accepted" in challenge(r)


def test_bad_settings_name_their_variable() -> None:
    with pytest.raises(ConfigurationError, match="MCP_AUTH_DPOP=required binds bearer tokens"):
        McpApp("x", settings=Settings.from_env({"MCP_AUTH_DPOP": "required"}))
    with pytest.raises(ConfigurationError, match="MCP_AUTH_DPOP_ALGS"):
        dpop_app(MCP_AUTH_DPOP_ALGS="HS256")
    with pytest.raises(ConfigurationError, match="MCP_AUTH_DPOP_NONCE_KEY"):
        dpop_app(MCP_AUTH_DPOP_NONCE_KEY="short")
    with pytest.raises(ConfigurationError, match="MCP_AUTH_DPOP"):
        Settings.from_env({"MCP_AUTH_DPOP": "maybe"})


def test_thumbprints_and_urls() -> None:
    for kind in ("EC", "RSA", "OKP"):
        key = DPoPKey(kind)
        assert jwk_thumbprint(key.key.as_dict(private=False)) == key.jkt
    assert normalize_url("HTTP://Example.COM:80/a%7eb?q=1#f") == "http://example.com/a~b"
    assert normalize_url("https://example.com:443") == "https://example.com/"
    assert normalize_url("https://[::1]:8443/mcp") == "https://[::1]:8443/mcp"
    assert normalize_url("https://example.com/%2f") == "https://example.com/%2F"
    assert normalize_url("ftp://example.com/") is None and normalize_url("http://host:port/") is None


def client_credentials(p: Provider, key: DPoPKey, resource: str | None = None) -> str:
    """A DPoP-bound token from the real authorization server (its token endpoint checks our proof)."""
    form = {"grant_type": "client_credentials", "scope": "tools", **({"resource": resource} if resource else {})}
    r = httpx.post(p.token_endpoint, data=form, auth=("dpop-client", "dpop-client-secret"),
                   headers={"dpop": key.proof("POST", p.token_endpoint)})
    assert r.status_code == 200 and r.json()["token_type"] == "DPoP", r.text
    return str(r.json()["access_token"])


@pytest.mark.parametrize("mode", ["oauth", "introspection"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_tokens_of_a_real_authorization_server(provider: Provider, mode: str, era: str) -> None:
    key = DPoPKey()
    if mode == "oauth":
        env = {"OAUTH_ISSUER_URL": provider.issuer, "OAUTH_AUDIENCE": URL, "OAUTH_JWKS_URI": provider.jwks_uri,
               "MCP_SERVER_RESOURCE_IDENTIFIER": URL}
        tok = client_credentials(provider, key, resource=URL)
    else:
        env = {"OAUTH_INTROSPECTION_URL": provider.introspection_endpoint, "OAUTH_INTROSPECTION_CLIENT_ID": "mcp-rs",
               "OAUTH_INTROSPECTION_CLIENT_SECRET": "mcp-rs-secret"}
        tok = client_credentials(provider, key)
    app = McpApp("dpop", tools=[whoami], settings=Settings.from_env(
        {"MCP_AUTH_MODE": mode, "MCP_AUTH_DPOP": "required", **env}))
    auth = DPoPAuth(key, tok)
    async with McpTestClient(app, era=era, initialize=False) as c:
        c.http.auth = auth
        if era == "legacy":
            await c.initialize()
        me = (await c.call_tool("whoami"))["structuredContent"]
        assert me == {"client": "dpop-client", "subject": None if mode == "introspection" else "dpop-client",
                      "jkt": key.jkt}
        assert len(set(auth.proofs)) == len(auth.proofs) >= 1
        if era == "legacy":
            assert (await c.delete_session()).status_code in (200, 204)  # DELETE carries its own proof
        thief = DPoPKey()  # the token without its key: a proof by another key is refused
        c.http.auth = DPoPAuth(thief, tok)
        r = await c.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, c.headers())
        assert r.status_code == 401 and "Invalid DPoP key binding" in challenge(r)


async def test_a_token_verifier_whose_identity_carries_cnf() -> None:
    key = DPoPKey()

    class Keys:
        async def verify_token(self, tok: str) -> AuthInfo | None:
            return AuthInfo(client_id="k", subject=tok, claims={"cnf": {"jkt": key.jkt}}) if tok == "opaque-1" else None

    app = McpApp("v", tools=[whoami], auth=Keys(), settings=Settings.from_env({"MCP_AUTH_DPOP": "required"}))
    async with McpTestClient(app, era="modern") as c:
        r = await send(c, "opaque-1", key.proof("POST", URL, "opaque-1"))
        assert r.status_code == 200 and r.json()["result"]["structuredContent"]["jkt"] == key.jkt
        r = await send(c, "opaque-2", key.proof("POST", URL, "opaque-2"))
        assert r.status_code == 401 and challenge(r).startswith('DPoP realm="mcp", error="invalid_token"')
