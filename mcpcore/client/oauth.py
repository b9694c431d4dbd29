"""``OAuth``: the client's side of MCP authorization, as an ``httpx.Auth`` for
:class:`~mcpcore.client.Client`.

On a 401 it follows the challenge's ``resource_metadata`` to the protected-resource metadata
(RFC 9728), reads the authorization server's metadata (RFC 8414, else OpenID discovery), gets a
client (one configured, a client ID metadata document, or dynamic registration, RFC 7591), sends
the person through authorization code + PKCE S256 with the ``resource`` indicator (RFC 8707),
exchanges the code and retries the request. Tokens are refreshed when they expire or are refused,
and kept in a :class:`~mcpcore.client.tokens.TokenStore`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from .discovery import OAuthError, choose_client, discover, origin, parse_challenge, pkce
from .loopback import LoopbackRedirect
from .tokens import MemoryTokenStore, TokenStore, TokenStoreLocked

__all__ = ["OAuth", "OAuthError", "parse_challenge"]

Authorize = Callable[[str], Awaitable[Any] | Any]
"""Sends the person to the authorization URL; returns ``(code, state)`` or the redirect's query
parameters (a mapping with ``code``, ``state``, perhaps ``iss`` or ``error``)."""

_SKEW = 30.0


class OAuth(httpx.Auth):
    """OAuth for :class:`~mcpcore.client.Client` (``Client(url, auth=OAuth(...))``).

    Args:
        on_authorize: sends the person to the authorization URL and returns ``(code, state)`` or
            the redirect's query (a mapping); it may be a coroutine. Unset: a
            :class:`~mcpcore.client.LoopbackRedirect` (a listener on ``127.0.0.1`` at a random
            port, the browser opened, a timeout).
        redirect_uri: where ``on_authorize``'s authorization server sends the person back
            (required with ``on_authorize``; the loopback listener has its own).
        client_id, client_secret: a client registered at the authorization server beforehand;
            used first when given.
        client_metadata_url: the HTTPS URL of this client's metadata document, used as its
            ``client_id`` when the server supports client ID metadata documents; else the
            client registers dynamically (RFC 7591) when the server allows it.
        client_name: the name dynamic registration gives.
        scopes: the scopes to ask for; unset: the challenge's ``scope``, else the resource's
            ``scopes_supported``.
        store: where tokens and the registered client are kept (a
            :class:`~mcpcore.client.MemoryTokenStore` by default; the CLI's is a
            :class:`~mcpcore.client.FileTokenStore`).
        server: the MCP endpoint these tokens are for (the ``Client`` sets it from its URL).
        clock: seconds since the epoch (tests move it to expire a token).
    """

    def __init__(self, *, on_authorize: Authorize | LoopbackRedirect | None = None, redirect_uri: str | None = None,
                 client_id: str | None = None, client_secret: str | None = None,
                 client_metadata_url: str | None = None, client_name: str = "mcpcore client",
                 scopes: Sequence[str] | None = None, store: TokenStore | None = None, server: str | None = None,
                 clock: Callable[[], float] = time.time, timeout: float = 30.0) -> None:
        if on_authorize is not None and not isinstance(on_authorize, LoopbackRedirect) and not redirect_uri:
            raise ValueError("on_authorize= needs redirect_uri=: the URI the authorization server sends the person "
                             "back to, where your app reads the code")
        if client_metadata_url is not None and not client_metadata_url.startswith("https://"):
            raise ValueError(f"client_metadata_url must be an https URL with a path, not {client_metadata_url!r}")
        self.on_authorize: Authorize | LoopbackRedirect = on_authorize or LoopbackRedirect()
        self.redirect_uri = redirect_uri
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.scopes = list(scopes) if scopes is not None else None
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.server = server
        self.clock = clock
        self.timeout = timeout
        self.transport: httpx.AsyncBaseTransport | None = None
        """Set by ``Client`` for an app served in process: requests to the server's origin go there."""
        self.authorizations = 0
        self.refreshes = 0
        self._lock: asyncio.Lock | None = None

    # -- the httpx side ---------------------------------------------------------------------------

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        server = self.server or str(request.url.copy_with(query=None, fragment=None))
        if origin(str(request.url)) != origin(server):  # never a token to another origin
            yield request
            return
        self.server = server
        used = await self._access_token()
        if used:
            request.headers["Authorization"] = f"Bearer {used}"
        response = yield request
        challenge = parse_challenge(response.headers.get("www-authenticate"))
        if response.status_code == 401:
            step_up = False
        elif response.status_code == 403 and challenge.get("error") == "insufficient_scope":
            step_up = True
        else:
            return
        token = await self._recover(challenge, used, step_up)
        request.headers["Authorization"] = f"Bearer {token}"
        yield request

    def sync_auth_flow(self, request: httpx.Request) -> Any:
        raise RuntimeError("OAuth works with httpx.AsyncClient (mcpcore.client.Client) only")

    # -- tokens -----------------------------------------------------------------------------------

    def _guard(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    @contextlib.asynccontextmanager
    async def _shared(self) -> AsyncIterator[None]:
        """The store's lock between processes, around a refresh (when the store has one)."""
        lock = getattr(self.store, "lock", None)
        if lock is None:
            yield
            return
        try:
            async with lock(self.server):
                yield
        except TokenStoreLocked as exc:
            raise OAuthError(f"{exc}: is another command stuck signing in? end it, or try again") from None

    async def _access_token(self) -> str | None:
        """The stored access token, refreshed first when it has expired."""
        assert self.server is not None

        def expired(tokens: Mapping[str, Any]) -> bool:
            at = tokens.get("expires_at")
            return bool(tokens.get("refresh_token")) and isinstance(at, (int, float)) and at - _SKEW <= self.clock()

        async with self._guard():
            record = await self.store.load(self.server) or {}
            tokens = record.get("tokens") or {}
            if expired(tokens):
                async with self._shared():
                    record = await self.store.load(self.server) or {}  # another process may have refreshed
                    tokens = record.get("tokens") or {}
                    if expired(tokens):
                        async with self._http() as http:
                            return await self._refresh(http, record)  # None: the grant is gone, a 401 signs in
            token = tokens.get("access_token")
            return token if isinstance(token, str) else None

    async def _recover(self, challenge: Mapping[str, str], used: str | None, step_up: bool) -> str:
        """A token for the retry: one another request (or process) just got, a refreshed one, or
        a sign-in."""
        assert self.server is not None
        async with self._guard():
            async with self._shared():
                record = await self.store.load(self.server) or {}
                current = (record.get("tokens") or {}).get("access_token")
                if current and current != used and not step_up:
                    return str(current)
                if not step_up and (record.get("tokens") or {}).get("refresh_token"):
                    async with self._http() as http:
                        refreshed = await self._refresh(http, record)
                    if refreshed is not None:
                        return refreshed
            record = await self.store.load(self.server) or {}
            async with self._http() as http:
                try:
                    return await self._sign_in(http, challenge, record, step_up)
                finally:
                    if isinstance(self.on_authorize, LoopbackRedirect):
                        await self.on_authorize.close()

    def _http(self) -> httpx.AsyncClient:
        mounts = {}
        if self.transport is not None and self.server:
            mounts[origin(self.server)] = self.transport
        return httpx.AsyncClient(mounts=mounts, timeout=self.timeout)

    @staticmethod
    def _client_auth(record: Mapping[str, Any], form: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        """``(form, headers)`` of a token or revocation request, the client authenticated as it
        registered: its id alone (public), or its secret in the form or as HTTP Basic."""
        client = record.get("client") or {}
        form = {**form, "client_id": str(client.get("client_id", ""))}
        headers = {"accept": "application/json"}
        secret, method = client.get("client_secret"), client.get("method", "none")
        if secret and method == "client_secret_basic":
            raw = f"{quote(str(client['client_id']), safe='')}:{quote(str(secret), safe='')}"  # RFC 6749 2.3.1
            headers["authorization"] = "Basic " + base64.b64encode(raw.encode()).decode("ascii")
        elif secret:
            form["client_secret"] = str(secret)
        return form, headers

    async def _post_token(self, http: httpx.AsyncClient, record: Mapping[str, Any],
                          form: dict[str, str]) -> dict[str, Any]:
        form, headers = self._client_auth(record, form)
        try:
            resp = await http.post(str(record["token_endpoint"]), data=form, headers=headers)
        except httpx.HTTPError as exc:
            raise OAuthError(f"cannot reach the token endpoint {record['token_endpoint']}: {exc}") from None
        try:
            body = resp.json()
        except ValueError:
            body = {}
        if resp.status_code != 200 or not isinstance(body, dict) or "access_token" not in body:
            err = body if isinstance(body, dict) else {}
            raise _TokenRefused(str(err.get("error") or f"HTTP {resp.status_code}"),
                                str(err.get("error_description") or ""))
        if str(body.get("token_type", "bearer")).lower() != "bearer":
            raise OAuthError(f"the authorization server issued a {body.get('token_type')} token; this client sends "
                             "bearer tokens only")
        return body

    def _keep(self, record: dict[str, Any], body: Mapping[str, Any]) -> str:
        old = record.get("tokens") or {}
        expires = body.get("expires_in")
        record["tokens"] = {
            "access_token": body["access_token"],
            "refresh_token": body.get("refresh_token") or old.get("refresh_token"),
            "expires_at": self.clock() + float(expires) if isinstance(expires, (int, float)) else None,
            "scope": body.get("scope") or old.get("scope"),
        }
        return str(body["access_token"])

    async def _refresh(self, http: httpx.AsyncClient, record: dict[str, Any]) -> str | None:
        """Swap the refresh token; ``None`` when the grant is gone (a sign-in follows)."""
        assert self.server is not None
        tokens = record.get("tokens") or {}
        form = {"grant_type": "refresh_token", "refresh_token": str(tokens["refresh_token"])}
        if record.get("resource"):
            form["resource"] = str(record["resource"])
        try:
            body = await self._post_token(http, record, form)
        except _TokenRefused as exc:
            if exc.error not in ("invalid_grant", "invalid_client", "unauthorized_client"):
                raise OAuthError(f"refreshing the token failed: {exc}") from None
            record.pop("tokens", None)
            if exc.error != "invalid_grant":
                record.pop("client", None)
            await self.store.save(self.server, record)
            return None
        token = self._keep(record, body)
        self.refreshes += 1
        await self.store.save(self.server, record)
        return token

    # -- signing in -------------------------------------------------------------------------------

    async def _redirect_uri(self) -> str:
        if isinstance(self.on_authorize, LoopbackRedirect):
            return await self.on_authorize.start()
        assert self.redirect_uri is not None
        return self.redirect_uri

    async def _sign_in(self, http: httpx.AsyncClient, challenge: Mapping[str, str], record: dict[str, Any],
                       step_up: bool) -> str:
        assert self.server is not None
        prm, meta = await discover(http, self.server, challenge)
        asked = (challenge.get("scope") or "").split() or \
            [s for s in prm.get("scopes_supported") or [] if isinstance(s, str)]
        scopes = self.scopes if self.scopes is not None else asked
        if step_up:  # what was granted, and what the challenge (else the resource) names
            granted = str((record.get("tokens") or {}).get("scope") or "").split()
            scopes = list(dict.fromkeys([*granted, *scopes, *asked]))
        redirect_uri = await self._redirect_uri()
        client = await choose_client(http, meta, record.get("client"), redirect_uri, scopes, client_id=self.client_id,
                                    client_secret=self.client_secret, client_metadata_url=self.client_metadata_url,
                                    client_name=self.client_name)
        record.update({"issuer": meta["issuer"], "resource": prm["resource"], "client": client,
                       "token_endpoint": meta["token_endpoint"],
                       "revocation_endpoint": meta.get("revocation_endpoint")})
        record.pop("tokens", None)
        await self.store.save(self.server, record)
        verifier, challenge_s256 = pkce()
        state = secrets.token_urlsafe(32)
        query = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect_uri,
                 "code_challenge": challenge_s256, "code_challenge_method": "S256", "state": state,
                 "resource": prm["resource"]}
        if scopes:
            query["scope"] = " ".join(scopes)
        endpoint = str(meta["authorization_endpoint"])
        url = endpoint + ("&" if "?" in endpoint else "?") + urlencode(query)
        self.authorizations += 1
        answer = await self._ask_person(url, state)
        if answer.get("error"):
            raise OAuthError(f"the authorization server refused the sign-in: {answer['error']}"
                             + (f" ({answer['error_description']})" if answer.get("error_description") else "")
                             + ": sign in again, and allow the access")
        if answer.get("state") != state:
            raise OAuthError("the sign-in came back with a state this client did not send (a stale or forged "
                             "redirect); nothing was exchanged: sign in again")
        if "iss" in answer and str(answer["iss"]).rstrip("/") != str(meta["issuer"]).rstrip("/"):
            raise OAuthError(f"the sign-in came back from {answer['iss']}, not {meta['issuer']} (RFC 9207); nothing "
                             "was exchanged: sign in again")
        if not answer.get("code"):
            raise OAuthError("the sign-in came back without a code: sign in again")
        form = {"grant_type": "authorization_code", "code": str(answer["code"]), "redirect_uri": redirect_uri,
                "code_verifier": verifier, "resource": str(prm["resource"])}
        try:
            body = await self._post_token(http, record, form)
        except _TokenRefused as exc:
            if exc.error in ("invalid_client", "unauthorized_client") and client.get("registered"):
                record.pop("client", None)
                await self.store.save(self.server, record)
            raise OAuthError(f"the authorization server refused the code: {exc}: sign in again") from None
        token = self._keep(record, body)
        await self.store.save(self.server, record)
        return token

    async def _ask_person(self, url: str, state: str) -> dict[str, str]:
        if isinstance(self.on_authorize, LoopbackRedirect):
            try:
                return await self.on_authorize.authorize(url, state)
            except TimeoutError as exc:
                raise OAuthError(str(exc)) from None
        out = self.on_authorize(url)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, Mapping):
            return {str(k): str(v) for k, v in out.items()}
        if isinstance(out, (tuple, list)) and len(out) == 2:
            return {"code": str(out[0]), **({"state": str(out[1])} if out[1] is not None else {})}
        raise OAuthError("on_authorize must return (code, state) or the redirect's query parameters")

    # -- signing out ------------------------------------------------------------------------------

    async def logout(self, server: str | None = None) -> bool | None:
        """Revoke the grant at the authorization server (RFC 7009, when it has a revocation
        endpoint) and forget the tokens of ``server`` (the bound one by default). Returns whether
        the server confirmed the revocation (``None``: nothing was stored)."""
        server = server or self.server
        if server is None:
            raise ValueError("which server? pass its URL")
        self.server = server
        async with self._guard():
            record = await self.store.load(server)
            if record is None:
                return None
            revoked = False
            tokens, endpoint = record.get("tokens") or {}, record.get("revocation_endpoint")
            token = tokens.get("refresh_token") or tokens.get("access_token")
            if token and isinstance(endpoint, str):
                form, headers = self._client_auth(record, {
                    "token": str(token),
                    "token_type_hint": "refresh_token" if tokens.get("refresh_token") else "access_token"})
                try:
                    async with self._http() as http:
                        revoked = (await http.post(endpoint, data=form, headers=headers)).status_code == 200
                except httpx.HTTPError:
                    revoked = False
            await self.store.clear(server)
            return revoked


class _TokenRefused(Exception):
    def __init__(self, error: str, description: str) -> None:
        super().__init__(f"{error}" + (f" ({description})" if description else ""))
        self.error = error
