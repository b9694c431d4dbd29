"""WWW-Authenticate challenges, the JSON-RPC form of refusals, and RFC 9728 metadata and URLs."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore import Settings
from mcpcore.auth import (
    PRM_CACHE_CONTROL,
    AuthError,
    JwtAuthenticator,
    auth_info_from_claims,
    is_valid_tenant_id,
    metadata_routes,
    metadata_url,
    parse_bearer,
    protected_resource_metadata,
    single_authorization,
)

PRM = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


# -- challenges ----------------------------------------------------------------------------------


def test_missing_credentials_challenge_has_no_error_code() -> None:
    e = AuthError.missing()
    assert e.www_authenticate(PRM) == f'Bearer realm="mcp", resource_metadata="{PRM}"'
    assert e.headers(PRM) == {"Cache-Control": "no-store",
                              "WWW-Authenticate": f'Bearer realm="mcp", resource_metadata="{PRM}"'}
    assert (e.status, e.json_rpc_code) == (401, -32006)
    assert e.response_body(None) == {"jsonrpc": "2.0", "id": None,
                                     "error": {"code": -32006, "message": "Authentication required."}}


def test_invalid_token_challenge() -> None:
    e = AuthError.invalid_token("Token has expired.", reason="expired")
    assert e.www_authenticate(PRM) == (
        f'Bearer realm="mcp", error="invalid_token", error_description="Token has expired.", resource_metadata="{PRM}"')
    assert e.www_authenticate() == 'Bearer realm="mcp", error="invalid_token", error_description="Token has expired."'


def test_invalid_request_is_400() -> None:
    e = AuthError.invalid_request()
    assert (e.status, e.json_rpc_code) == (400, -32600)
    assert 'error="invalid_request"' in (e.www_authenticate(PRM) or "")


def test_insufficient_scope_names_scopes_only_in_the_header() -> None:
    e = AuthError.insufficient_scope(["files:write", "files:read", "files:write"])
    assert e.status == 403
    assert e.www_authenticate(PRM) == (
        'Bearer realm="mcp", error="insufficient_scope", error_description="Insufficient permissions.", '
        f'scope="files:write files:read", resource_metadata="{PRM}"')
    assert "scope=" not in (e.www_authenticate(PRM, include_scope=False) or "")
    err = e.to_mcp_error()
    assert (err.code, err.message, err.data) == (-32005, "Insufficient permissions.", None)
    assert "files" not in str(e.response_body(1))
    with pytest.raises(TypeError):
        AuthError.insufficient_scope("files:write")


def test_header_values_are_sanitised() -> None:
    e = AuthError(401, "invalid_token", 'bad "quote" \\ and\nnewline', reason="x", scopes=['ok', 'no"pe', 'sp ace'])
    h = e.www_authenticate('https://x/"y') or ""
    assert h == ('Bearer realm="mcp", error="invalid_token", error_description="bad quote  andnewline", '
                 'scope="ok", resource_metadata="https://x/y"')


def test_unavailable_is_not_a_challenge() -> None:
    e = AuthError.unavailable(retry_after=7)
    assert (e.status, e.www_authenticate(PRM), e.json_rpc_code) == (503, None, -32000)
    assert e.headers(PRM) == {"Cache-Control": "no-store", "Retry-After": "7"}


def test_repr_has_no_secret_material() -> None:
    assert repr(AuthError.invalid_token("Token has expired.", reason="expired")) == (
        "AuthError(status=401, error='invalid_token', description='Token has expired.', reason='expired')")


def test_single_authorization_header() -> None:
    assert single_authorization([]) is None
    assert single_authorization(["Bearer x"]) == "Bearer x"
    with pytest.raises(AuthError) as ei:
        single_authorization(["Bearer x", "Bearer y"])
    assert (ei.value.status, ei.value.error) == (400, "invalid_request")


@pytest.mark.parametrize("tid", ["acme", "a", "A9", "acme.corp_1-x", "a" * 128, "a.b.c"])
def test_valid_tenant_ids(tid: str) -> None:
    assert is_valid_tenant_id(tid)


@pytest.mark.parametrize("tid", ["", "..", "a..b", "-abc", "abc-", ".a", "a_", "a" * 129, "tén", "a b", "a/b",
                                 "a\n", 5, None])
def test_invalid_tenant_ids(tid: Any) -> None:
    assert not is_valid_tenant_id(tid)


# -- RFC 9728 ------------------------------------------------------------------------------------


def s(**kw: Any) -> Settings:
    return Settings.from_env({}, **kw)


def test_oauth_metadata_document() -> None:
    settings = s(auth_mode="oauth", oauth_issuer_url="https://issuer.example.com", oauth_audience="api",
                 public_url="https://mcp.example.com")
    doc = protected_resource_metadata(settings, "http://10.0.0.5:8000/", ["b:write", "a:read", "b:write"])
    assert doc == {
        "resource": "https://mcp.example.com/mcp",
        "authorization_servers": ["https://issuer.example.com"],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["a:read", "b:write"],
    }
    assert "resource_signing_alg_values_supported" not in doc


def test_jwt_metadata_document() -> None:
    doc = protected_resource_metadata(s(auth_mode="jwt"), "http://127.0.0.1:8000/")
    assert doc == {"resource": "http://127.0.0.1:8000/mcp", "bearer_methods_supported": ["header"]}


def test_resource_identifier_wins() -> None:
    settings = s(auth_mode="oauth", oauth_issuer_url="https://i", server_resource_identifier="https://api.example.com",
                 public_url="https://mcp.example.com")
    assert protected_resource_metadata(settings, "http://x/")["resource"] == "https://api.example.com"


def test_metadata_urls() -> None:
    urls = metadata_url(s(public_url="https://mcp.example.com/"), "http://10.0.0.5:8000/")
    assert (urls.root, urls.path_suffixed, urls.challenge) == (
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
    from_request = metadata_url(s(), "http://127.0.0.1:8000/")
    assert from_request.path_suffixed == "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"
    custom = metadata_url(s(endpoint_path="/api/v1/mcp"), "http://h/")
    assert custom.path_suffixed == "http://h/.well-known/oauth-protected-resource/api/v1/mcp"
    assert metadata_url(s(), "http://h/", "/").path_suffixed == "http://h/.well-known/oauth-protected-resource"
    prefixed = metadata_url(s(public_url="https://example.com/tools"), "http://h/")
    assert prefixed.root == "https://example.com/.well-known/oauth-protected-resource"
    assert prefixed.path_suffixed == "https://example.com/.well-known/oauth-protected-resource/tools/mcp"
    assert protected_resource_metadata(s(auth_mode="jwt", public_url="https://example.com/tools"),
                                       "http://h/")["resource"] == "https://example.com/tools/mcp"


def test_metadata_routes() -> None:
    assert metadata_routes(s()) == ()
    assert metadata_routes(s(auth_mode="jwt")) == ("/.well-known/oauth-protected-resource",
                                                   "/.well-known/oauth-protected-resource/mcp")
    assert metadata_routes(s(auth_mode="oauth", public_url="https://example.com/tools")) == (
        "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource/tools/mcp")
    assert PRM_CACHE_CONTROL == "public, max-age=3600"


# -- hostile input ---------------------------------------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["cid", "client_id", "scp", "scope", "mcp_tool_scopes", "sub", "tid", "exp",
                                        "other"]), _json_values))
def test_claim_mapping_never_fails_unexpectedly(claims: dict[str, Any]) -> None:
    try:
        info = auth_info_from_claims(claims)
    except AuthError as e:
        assert (e.status, e.error) == (401, "invalid_token")
    else:
        assert info.client_id and (info.tenant_id is None or is_valid_tenant_id(info.tenant_id))
        assert all(isinstance(x, str) and x for x in info.scopes)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=200), st.text(max_size=200).map(lambda t: "Bearer " + t),
                 st.binary(max_size=120).map(lambda b: "Bearer " + base64.urlsafe_b64encode(b).decode())))
def test_header_parsing_only_raises_auth_errors(header: str | None) -> None:
    auth = JwtAuthenticator("k" * 32)
    with pytest.raises(AuthError) as ei:
        auth.verify(parse_bearer(header))  # what authenticate() does, without a loop per example
    assert ei.value.status in (400, 401)
