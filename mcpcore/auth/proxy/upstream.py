"""The upstream identity provider the login is delegated to, as a small named preset.

- ``oidc`` (Google, Entra ID, Keycloak, Okta, Auth0, any OpenID provider): the endpoints from
  ``{issuer}/.well-known/openid-configuration``; the user is the verified ID token's ``sub``
  (signature by the provider's JWKS, ``iss``, ``aud`` = our upstream client id, ``nonce``), the
  tenant its ``OAUTH_UPSTREAM_TENANT_CLAIM`` (from the userinfo endpoint when the ID token lacks it).
- ``google``: ``oidc`` at ``https://accounts.google.com`` (the default issuer), asking for
  ``access_type=offline`` and ``prompt=consent`` so that every sign-in brings a refresh token
  (Google gives one only then), and accepting the ID token's legacy issuer ``accounts.google.com``.
- ``github`` (OAuth 2.0, not OpenID): ``{base}/login/oauth/authorize`` and ``/access_token``,
  the user from ``GET {api}/user`` (its numeric ``id``); ``api.github.com`` for github.com, else
  ``{base}/api/v3`` (GitHub Enterprise Server).

Our calls to the provider use httpx with a deadline and no redirects. PKCE S256 is sent upstream
too, whatever the provider requires.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx

from ... import _json
from ...errors import ConfigurationError
from ..oauth import check_url

__all__ = ["Identity", "Upstream", "UpstreamError"]

log = logging.getLogger("mcpcore.auth")
_ID_TOKEN_ALGS = ["RS256", "ES256", "PS256", "RS384", "ES384", "RS512"]
GOOGLE = "https://accounts.google.com"
# What a preset adds to the authorization request, and its default scopes.
_AUTHORIZE_EXTRA = {"google": {"access_type": "offline", "prompt": "consent"}}
_DEFAULT_SCOPES = {"github": ("read:user",), "google": ("openid", "email", "profile")}


class UpstreamError(Exception):
    """The provider refused or failed; ``str()`` is safe to show the user."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the provider says logged in."""

    subject: str
    tenant: str | None = None
    name: str | None = None


class Upstream:
    """One upstream provider (see the module docstring).

    Raises:
        ConfigurationError: a missing client id/secret or issuer, naming the variable.
    """

    def __init__(self, *, preset: str = "oidc", issuer_url: str | None, client_id: str | None,
                 client_secret: str | None, scopes: tuple[str, ...] = (), tenant_claim: str = "tid",
                 timeout: float = 10.0, transport: httpx.AsyncBaseTransport | None = None) -> None:
        if preset not in ("oidc", "google", "github"):
            raise ConfigurationError(f"OAUTH_UPSTREAM_PRESET must be oidc, google or github, got {preset!r}")
        if preset != "oidc":
            issuer_url = issuer_url or (GOOGLE if preset == "google" else "https://github.com")
        if not issuer_url:
            raise ConfigurationError("OAUTH_UPSTREAM_ISSUER_URL is required when MCP_AUTH_MODE=proxy")
        if not client_id or not client_secret:
            raise ConfigurationError("OAUTH_UPSTREAM_CLIENT_ID and OAUTH_UPSTREAM_CLIENT_SECRET are required when "
                                     "MCP_AUTH_MODE=proxy (the app registered at the upstream provider)")
        self.preset = preset
        self.issuer = check_url("OAUTH_UPSTREAM_ISSUER_URL", issuer_url).rstrip("/")
        self.client_id = client_id
        self._secret = client_secret
        self.scopes = scopes or _DEFAULT_SCOPES.get(preset, ("openid",))
        if preset != "github" and "openid" not in self.scopes:
            self.scopes = ("openid", *self.scopes)
        self.tenant_claim = tenant_claim
        self.timeout = timeout
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=False, transport=transport)
        self.meta: dict[str, Any] = {}
        self._jwks: list[dict[str, Any]] = []
        self._lock = anyio.Lock()
        if preset == "github":
            api = "https://api.github.com" if self.issuer == "https://github.com" else f"{self.issuer}/api/v3"
            self.meta = {"authorization_endpoint": f"{self.issuer}/login/oauth/authorize",
                         "token_endpoint": f"{self.issuer}/login/oauth/access_token",
                         "userinfo_endpoint": f"{api}/user", "token_endpoint_auth_methods_supported":
                             ["client_secret_post"]}

    def __repr__(self) -> str:
        return f"Upstream(preset={self.preset!r}, issuer={self.issuer!r}, client_id={self.client_id!r})"

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._http.aclose()

    async def discover(self) -> dict[str, Any]:
        """The provider's metadata (fetched once; a failure is retried on the next call).

        Raises:
            UpstreamError: the discovery document cannot be had.
        """
        if self.meta:
            return self.meta
        async with self._lock:
            if not self.meta:
                doc = await self._json("GET", f"{self.issuer}/.well-known/openid-configuration")
                if str(doc.get("issuer", "")).rstrip("/") != self.issuer:
                    raise UpstreamError("the identity provider's discovery document names another issuer")
                self.meta = doc
        return self.meta

    async def _json(self, method: str, url: str, **kw: Any) -> dict[str, Any]:
        try:
            resp = await self._http.request(method, url, **kw)
            doc = _json.loads(resp.content) if resp.content else {}
        except (httpx.HTTPError, ValueError) as e:
            log.warning("upstream provider call failed", extra={"fields": {"url": url, "error": type(e).__name__}})
            raise UpstreamError("the identity provider could not be reached") from None
        if not isinstance(doc, dict):
            raise UpstreamError("the identity provider answered something other than a JSON object")
        if resp.status_code >= 400 or "error" in doc:
            log.info("upstream provider refused", extra={"fields": {"url": url, "status": resp.status_code,
                                                                     "error": str(doc.get("error"))[:100]}})
            raise UpstreamError(f"the identity provider refused: {str(doc.get('error', resp.status_code))[:100]}")
        return doc

    async def authorize_url(self, redirect_uri: str, state: str, challenge: str, nonce: str) -> str:
        """Where the user's browser goes to log in."""
        meta = await self.discover()
        query = {"response_type": "code", "client_id": self.client_id, "redirect_uri": redirect_uri,
                 "scope": " ".join(self.scopes), "state": state, "code_challenge": challenge,
                 "code_challenge_method": "S256"}
        if self.preset != "github":
            query["nonce"] = nonce
        query.update(_AUTHORIZE_EXTRA.get(self.preset, {}))
        endpoint = str(meta["authorization_endpoint"])
        return endpoint + ("&" if "?" in endpoint else "?") + urlencode(query)

    def _client_auth(self, meta: dict[str, Any], form: dict[str, str]) -> dict[str, Any]:
        methods = meta.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if "client_secret_basic" in methods:
            return {"data": form, "auth": httpx.BasicAuth(self.client_id, self._secret)}
        return {"data": {**form, "client_id": self.client_id, "client_secret": self._secret}}

    async def _token(self, form: dict[str, str]) -> dict[str, Any]:
        meta = await self.discover()
        doc = await self._json("POST", str(meta["token_endpoint"]), headers={"accept": "application/json"},
                               **self._client_auth(meta, form))
        if not isinstance(doc.get("access_token"), str):
            raise UpstreamError("the identity provider issued no access token")
        expires_in = doc.get("expires_in")
        tokens = {k: doc[k] for k in ("access_token", "refresh_token", "id_token", "scope", "token_type")
                  if isinstance(doc.get(k), str)}
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
            tokens["expires_at"] = time.time() + float(expires_in)
        return tokens

    async def exchange(self, code: str, redirect_uri: str, verifier: str) -> dict[str, Any]:
        """The provider's tokens for the code its callback brought.

        Raises:
            UpstreamError: refused or unreachable.
        """
        return await self._token({"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                                  "code_verifier": verifier})

    async def refresh(self, refresh_token: str) -> dict[str, Any]:
        """New provider tokens by its refresh token (the old refresh token kept when none comes back).

        Raises:
            UpstreamError: refused or unreachable.
        """
        tokens = await self._token({"grant_type": "refresh_token", "refresh_token": refresh_token})
        tokens.setdefault("refresh_token", refresh_token)
        return tokens

    async def identify(self, tokens: dict[str, Any], nonce: str) -> Identity:
        """The user the tokens belong to (see the module docstring).

        Raises:
            UpstreamError: no verifiable identity.
        """
        meta = await self.discover()
        if self.preset == "github":
            user = await self._json("GET", str(meta["userinfo_endpoint"]), headers={
                "authorization": f"Bearer {tokens['access_token']}", "accept": "application/vnd.github+json"})
            if not isinstance(user.get("id"), int):
                raise UpstreamError("GitHub returned no user id")
            login = user.get("login")
            return Identity(str(user["id"]), None, login if isinstance(login, str) else None)
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise UpstreamError("the identity provider returned no ID token (is 'openid' among the scopes?)")
        claims = await self._verify_id_token(id_token, nonce)
        tenant = claims.get(self.tenant_claim)
        if tenant is None and meta.get("userinfo_endpoint"):
            info = await self._json("GET", str(meta["userinfo_endpoint"]),
                                    headers={"authorization": f"Bearer {tokens['access_token']}"})
            tenant = info.get(self.tenant_claim) if info.get("sub") == claims["sub"] else None
        name = claims.get("name") or claims.get("email")
        return Identity(str(claims["sub"]), tenant if isinstance(tenant, str) else None,
                        name if isinstance(name, str) else None)

    async def _verify_id_token(self, token: str, nonce: str) -> dict[str, Any]:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise UpstreamError("the identity provider's ID token is malformed") from None
        alg = header.get("alg")
        if alg not in _ID_TOKEN_ALGS:
            raise UpstreamError("the identity provider's ID token uses an algorithm not accepted")
        for attempt in range(2):
            if attempt or not self._jwks:
                doc = await self._json("GET", str((await self.discover())["jwks_uri"]))
                self._jwks = [k for k in doc.get("keys", []) if isinstance(k, dict)]
            keys = [k for k in self._jwks if k.get("kid") == header.get("kid") or header.get("kid") is None]
            for jwk in keys:
                try:
                    issuer = str(self.meta.get("issuer", self.issuer))
                    issuers = [issuer, "accounts.google.com"] if self.preset == "google" else [issuer]
                    claims: dict[str, Any] = jwt.decode(
                        token, jwt.PyJWK(jwk, algorithm=alg), algorithms=[alg], audience=self.client_id, issuer=issuers,
                        options={"require": ["exp", "iss", "aud", "sub"]}, leeway=30)
                except jwt.PyJWTError:
                    continue
                if claims.get("nonce") != nonce:
                    raise UpstreamError("the identity provider's ID token is not for this login (nonce)")
                return claims
        raise UpstreamError("the identity provider's ID token did not verify")
