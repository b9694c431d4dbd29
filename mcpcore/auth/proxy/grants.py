"""The client's part of the flow: ``/oauth/token`` (authorization code, refresh token),
``/oauth/revoke`` (RFC 7009) and the client authentication they share.

- A code is redeemed once: the record is swapped for a "used" marker naming the grant it made,
  so a second redemption is refused ``invalid_grant`` and ends that grant (RFC 6749 §4.1.2).
  The client, the redirect URI and the PKCE S256 verifier must match what ``/authorize`` saw.
- A refresh token is used once: each use rotates it; presenting a used one again is taken as
  theft and ends its whole family (every refresh token of that grant, and the upstream tokens).
- A DPoP proof on the request (RFC 9449 §5) binds the grant to its key: the access tokens carry
  ``cnf.jkt`` (``token_type`` ``DPoP``), and every refresh must prove the same key.
- Client authentication follows the client's method: ``none`` (public clients, PKCE),
  ``client_secret_basic`` / ``client_secret_post`` (registered or configured with a secret),
  ``private_key_jwt`` (a CIMD client: an assertion signed by a key of its ``jwks_uri``/``jwks``,
  ``iss`` = ``sub`` = client id, ``aud`` our token endpoint or issuer, its ``jti`` used once).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Any
from urllib.parse import unquote

from ... import _json
from ...asgi_types import Scope, Send
from .clients import Client, ClientError
from .core import ProxyCore, digest, new_id
from .fetch import FetchRefused
from .store import StoreFull
from .web import header, send_json

__all__ = ["OAuthFailure", "revoke", "token"]

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_ASSERTION_ALGS = ["RS256", "ES256", "PS256", "EdDSA"]


class OAuthFailure(Exception):
    """An OAuth error answer: ``error``, its description and HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.status = status


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def _basic(scope: Scope) -> tuple[str, str] | None:
    raw = header(scope, b"authorization")
    if not raw or not raw.lower().startswith("basic "):
        return None
    try:
        user, _, password = base64.b64decode(raw[6:].strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        raise OAuthFailure("invalid_client", "malformed Basic credentials", 401) from None
    return unquote(user), unquote(password)


async def authenticate_client(core: ProxyCore, scope: Scope, form: dict[str, str]) -> Client:
    """The client making this token or revocation request.

    Raises:
        OAuthFailure: ``invalid_client`` (401) or ``invalid_request``.
    """
    basic = _basic(scope)
    assertion = form.get("client_assertion")
    client_id = basic[0] if basic else form.get("client_id")
    if assertion is not None:
        client_id = _assertion_issuer(assertion, client_id)
    if not client_id:
        raise OAuthFailure("invalid_client", "client_id is missing", 401)
    try:
        client = await core.client(client_id)
    except ClientError as e:
        raise OAuthFailure("invalid_client", str(e), 401) from None
    secret = basic[1] if basic else form.get("client_secret")
    if client.auth_method == "private_key_jwt":
        if assertion is None or form.get("client_assertion_type") != ASSERTION_TYPE:
            raise OAuthFailure("invalid_client", "this client authenticates with private_key_jwt", 401)
        await _check_assertion(core, client, assertion)
    elif client.secret_hash is not None:
        given = hashlib.sha256((secret or "").encode()).hexdigest()
        if not hmac.compare_digest(given, client.secret_hash):
            raise OAuthFailure("invalid_client", "client authentication failed", 401)
    elif secret is not None or assertion is not None:
        raise OAuthFailure("invalid_client", "this client is public: it authenticates with PKCE only", 401)
    return client


def _assertion_issuer(assertion: str, claimed: str | None) -> str:
    import jwt

    try:
        iss = jwt.decode(assertion, options={"verify_signature": False}).get("iss")
    except jwt.PyJWTError:
        raise OAuthFailure("invalid_client", "client_assertion is malformed", 401) from None
    if not isinstance(iss, str) or (claimed is not None and claimed != iss):
        raise OAuthFailure("invalid_client", "client_assertion names another client", 401)
    return iss


async def _check_assertion(core: ProxyCore, client: Client, assertion: str) -> None:
    import jwt

    keys = client.jwks
    if keys is None and client.jwks_uri:
        try:
            fetched = await core.cimd.fetcher.get(client.jwks_uri, max_bytes=64 * 1024)
            keys = _json.loads(fetched.body) if fetched.status == 200 else None
        except (FetchRefused, ValueError):
            keys = None
    if not isinstance(keys, dict) or not isinstance(keys.get("keys"), list):
        raise OAuthFailure("invalid_client", "the client's keys could not be read", 401)
    alg = jwt.get_unverified_header(assertion).get("alg")
    if alg not in _ASSERTION_ALGS:
        raise OAuthFailure("invalid_client", "client_assertion algorithm is not accepted", 401)
    for jwk in keys["keys"]:
        try:
            claims = jwt.decode(assertion, jwt.PyJWK(jwk, algorithm=alg), algorithms=[alg],
                                audience=[core.url("/oauth/token"), core.issuer], issuer=client.client_id,
                                options={"require": ["exp", "iss", "sub", "aud", "jti"]})
        except (jwt.PyJWTError, ValueError, TypeError):
            continue
        if claims["sub"] != client.client_id or claims["exp"] - time.time() > 600:
            break
        key = digest(f"{client.client_id}\x00{claims['jti']}")
        if await core.store.get("assertion", key) is not None:
            raise OAuthFailure("invalid_client", "client_assertion was already used", 401)
        await core.store.put("assertion", key, {}, max(1.0, claims["exp"] - time.time() + 60))
        return
    raise OAuthFailure("invalid_client", "client_assertion did not verify", 401)


async def _dpop_key(core: ProxyCore, scope: Scope) -> str | None:
    """The thumbprint of the key the request's DPoP proof proves, or ``None`` without a proof."""
    proofs = [v for k, v in scope["headers"] if k == b"dpop"]
    if not proofs:
        return None
    from ..dpop import ProofChecker
    from ..errors import AuthError

    try:
        checked = ProofChecker().check(proofs, "POST", core.url("/oauth/token"), None)
    except AuthError as e:
        raise OAuthFailure("invalid_dpop_proof", e.description) from None
    if await core.store.get("dpop", checked.replay_key) is not None:
        raise OAuthFailure("invalid_dpop_proof", "the DPoP proof was already used")
    await core.store.put("dpop", checked.replay_key, {}, 600)
    return checked.jkt


async def token(core: ProxyCore, scope: Scope, send: Send, form: dict[str, str]) -> None:
    """``POST /oauth/token``."""
    try:
        client = await authenticate_client(core, scope, form)
        jkt = await _dpop_key(core, scope)
        kind = form.get("grant_type")
        if kind == "authorization_code":
            answer = await _code(core, client, form, jkt)
        elif kind == "refresh_token":
            answer = await _refresh(core, client, form, jkt)
        else:
            raise OAuthFailure("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
    except OAuthFailure as e:
        extra = [(b"www-authenticate", b'Basic realm="oauth"')] if e.status == 401 else []
        await send_json(send, e.status, {"error": e.error, "error_description": str(e)}, extra)
        return
    except StoreFull:
        await send_json(send, 503, {"error": "temporarily_unavailable", "error_description": "try again later"})
        return
    await send_json(send, 200, answer)


async def _code(core: ProxyCore, client: Client, form: dict[str, str], jkt: str | None) -> dict[str, Any]:
    code, verifier = form.get("code"), form.get("code_verifier")
    if not code:
        raise OAuthFailure("invalid_request", "code is missing")
    family = new_id()
    grant = await core.store.swap("code", digest(code), {"used": True, "family": family})
    if grant is None:
        raise OAuthFailure("invalid_grant", "the code is unknown or expired")
    if grant.get("used"):
        await core.revoke_family(grant["family"])
        raise OAuthFailure("invalid_grant", "the code was already used; the tokens it gave are revoked")
    if grant["client_id"] != client.client_id:
        raise OAuthFailure("invalid_grant", "the code was issued to another client")
    if form.get("redirect_uri") != grant["redirect_uri"]:
        raise OAuthFailure("invalid_grant", "redirect_uri differs from the authorization request's")
    if not verifier or not 43 <= len(verifier) <= 128 or not hmac.compare_digest(_s256(verifier), grant["challenge"]):
        raise OAuthFailure("invalid_grant", "code_verifier does not match the code_challenge (PKCE S256)")
    if "resource" in form and form["resource"].rstrip("/") != grant["resource"].rstrip("/"):
        raise OAuthFailure("invalid_target", f"this server issues tokens only for {grant['resource']}")
    record = {**{k: grant[k] for k in ("client_id", "sub", "tid", "name", "scopes", "resource", "upstream")},
              "jkt": jkt}
    await core.store.put("family", family, record, core.refresh_ttl)
    return await core.mint(family, record, tuple(grant["scopes"]))


async def _refresh(core: ProxyCore, client: Client, form: dict[str, str], jkt: str | None) -> dict[str, Any]:
    presented = form.get("refresh_token")
    if not presented:
        raise OAuthFailure("invalid_request", "refresh_token is missing")
    key = digest(presented)
    seen = await core.store.get("refresh", key)
    if seen is None:
        raise OAuthFailure("invalid_grant", "the refresh token is unknown or expired")
    old = await core.store.swap("refresh", key, {"used": True, "family": seen["family"],
                                                 "client_id": seen["client_id"]})
    if old is None or old.get("used"):
        await core.revoke_family(seen["family"])
        raise OAuthFailure("invalid_grant", "the refresh token was already used; its grant is revoked")
    if old["client_id"] != client.client_id:
        raise OAuthFailure("invalid_grant", "the refresh token was issued to another client")
    family = await core.store.get("family", old["family"])
    if family is None:
        raise OAuthFailure("invalid_grant", "the grant was revoked")
    if family.get("jkt") is not None and family["jkt"] != jkt:
        raise OAuthFailure("invalid_dpop_proof", "this grant is bound to a DPoP key: prove it on every refresh")
    scopes = tuple(old["scopes"])
    if "scope" in form:
        asked = tuple(dict.fromkeys(form["scope"].split()))
        if not set(asked) <= set(scopes):
            raise OAuthFailure("invalid_scope", "a refresh may only narrow the granted scopes")
        scopes = asked
    await core.store.put("family", old["family"], family, core.refresh_ttl)
    return await core.mint(old["family"], family, scopes)


async def revoke(core: ProxyCore, scope: Scope, send: Send, form: dict[str, str]) -> None:
    """``POST /oauth/revoke`` (RFC 7009): a refresh or access token of the calling client ends its
    grant; an unknown token is answered 200 as well."""
    try:
        client = await authenticate_client(core, scope, form)
    except OAuthFailure as e:
        await send_json(send, e.status, {"error": e.error, "error_description": str(e)})
        return
    presented = form.get("token")
    if not presented:
        await send_json(send, 400, {"error": "invalid_request", "error_description": "token is missing"})
        return
    family: str | None = None
    record = await core.store.get("refresh", digest(presented))
    if record is not None and record["client_id"] == client.client_id:
        family = record["family"]
    elif record is None and presented.count(".") == 2:
        family = await _access_family(core, presented, client.client_id)
    if family is not None:
        await core.revoke_family(family)
    await send_json(send, 200, {})


async def _access_family(core: ProxyCore, presented: str, client_id: str) -> str | None:
    import jwt

    for jwk in core.keys.jwks:
        try:
            claims = jwt.decode(presented, jwt.PyJWK(jwk, algorithm="ES256"), algorithms=["ES256"],
                                issuer=core.issuer, options={"verify_aud": False})
        except jwt.PyJWTError:
            continue
        fam = claims.get("fam")
        return fam if claims.get("client_id") == client_id and isinstance(fam, str) else None
    return None
