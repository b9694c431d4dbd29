"""The browser's part of the flow: ``/oauth/authorize``, the upstream ``/oauth/callback`` and the
``/oauth/consent`` form.

An error before the client and its redirect URI are known to be good is a page, never a redirect
(RFC 6749 §4.1.2.1: no open redirector); after that, the client gets ``error`` at its redirect
URI with its ``state`` and our ``iss`` (RFC 9207). The transaction, the pending approval and the
browser are bound together: the flow must come back to the browser that started it (a cookie of
one random id, the same for every flow), the consent form carries a CSRF token bound to the
pending approval and that browser, and a cross-site POST is refused outright. A source address
starts at most :data:`AUTHORIZE_PER_MINUTE` sign-ins a minute (each stores a transaction).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import secrets
from typing import Any
from urllib.parse import urlsplit

from ...asgi_types import Scope, Send
from .clients import ClientError
from .core import TXN_TTL, ProxyCore, new_id
from .pages import consent_page, error_page
from .store import StoreFull
from .upstream import UpstreamError
from .web import browser_of, header, redirect, redirect_with, send_page, with_browser_cookie

__all__ = ["authorize", "callback", "consent"]

log = logging.getLogger("mcpcore.auth")
_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
MAX_STATE = 1024
# Sign-ins a source address may start per minute: each stores a transaction for 10 minutes.
AUTHORIZE_PER_MINUTE = 60


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


async def _to_client(core: ProxyCore, send: Send, uri: str, state: str | None, error: str, description: str,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await redirect(send, redirect_with(uri, {"error": error, "error_description": description, "state": state,
                                             "iss": core.issuer}), headers or [])


def _same_resource(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


async def authorize(core: ProxyCore, scope: Scope, send: Send, q: dict[str, str]) -> None:
    """``GET /oauth/authorize``: check the request, remember it, send the browser upstream."""
    peer = scope.get("client")
    if await core.store.hit("authorize-rate", peer[0] if peer else "unknown", 60) > AUTHORIZE_PER_MINUTE:
        await send_page(send, 429, error_page("busy"), [(b"retry-after", b"60")])
        return
    client_id = q.get("client_id")
    if not client_id:
        await send_page(send, 400, error_page("bad_request", "client_id is missing."))
        return
    try:
        client = await core.client(client_id)
    except ClientError as e:
        await send_page(send, 400, error_page("unknown_client", str(e)))
        return
    uri = q.get("redirect_uri") or (client.redirect_uris[0] if len(client.redirect_uris) == 1 else "")
    if not uri or not client.allows(uri):
        await send_page(send, 400, error_page("bad_redirect"))
        return
    state = q.get("state")
    if state is not None and len(state) > MAX_STATE:
        await _to_client(core, send, uri, None, "invalid_request", "state is too long")
        return
    problem: tuple[str, str] | None = None
    if q.get("response_type") != "code":
        problem = ("unsupported_response_type", "response_type must be code")
    elif "code_challenge" not in q:
        problem = ("invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256")
    elif q.get("code_challenge_method") != "S256":
        problem = ("invalid_request", "code_challenge_method must be S256")
    elif not _CHALLENGE.fullmatch(q["code_challenge"]):
        problem = ("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)")
    elif "resource" in q and not _same_resource(q["resource"], core.resource):
        problem = ("invalid_target", f"this server issues tokens only for {core.resource}")
    if problem is not None:
        await _to_client(core, send, uri, state, *problem)
        return
    browser, cookie = with_browser_cookie(scope, core.secure)
    verifier = secrets.token_urlsafe(48)
    nonce = new_id()
    txn = new_id()
    record = {"client_id": client.client_id, "redirect_uri": uri, "challenge": q["code_challenge"], "state": state,
              "scopes": list(core.grant_scopes(q.get("scope"))), "resource": core.resource, "browser": browser,
              "verifier": verifier, "nonce": nonce}
    try:
        target = await core.upstream.authorize_url(core.url("/oauth/callback"), txn, _s256(verifier), nonce)
        await core.store.put("txn", txn, record, TXN_TTL)
    except StoreFull:
        await send_page(send, 503, error_page("busy"))
        return
    except UpstreamError as e:
        await send_page(send, 502, error_page("upstream_failed", str(e)))
        return
    await redirect(send, target, cookie)


async def callback(core: ProxyCore, scope: Scope, send: Send, q: dict[str, str]) -> None:
    """``GET /oauth/callback``: the provider sent the browser back; learn who it is, then ask for
    consent (or remember it) and answer the client."""
    txn_id = q.get("state")
    txn = await core.store.take("txn", txn_id) if txn_id else None
    if txn is None:
        await send_page(send, 400, error_page("expired"))
        return
    if browser_of(scope) != txn["browser"]:
        await send_page(send, 400, error_page("state_mismatch"))
        return
    back = redirect_with(txn["redirect_uri"], {"error": "access_denied", "state": txn["state"], "iss": core.issuer})
    if "error" in q or "code" not in q:
        detail = q.get("error_description") or q.get("error") or "no code"
        await send_page(send, 403, error_page("upstream_refused", detail[:200], back))
        return
    try:
        tokens = await core.upstream.exchange(q["code"], core.url("/oauth/callback"), txn["verifier"])
        who = await core.upstream.identify(tokens, txn["nonce"])
    except UpstreamError as e:
        await send_page(send, 502, error_page("upstream_refused", str(e), back))
        return
    grant = {**{k: txn[k] for k in ("client_id", "redirect_uri", "challenge", "scopes", "resource", "state")},
             "sub": who.subject, "tid": who.tenant, "name": who.name,
             "upstream": core.keys.seal(tokens, f"upstream:{who.subject}")}
    remembered = await core.store.get("consent", _consent_key(grant))
    if remembered is not None and set(grant["scopes"]) <= set(remembered.get("scopes", ())):
        await _answer(core, send, grant)
        return
    pending = new_id()
    try:
        await core.store.put("pending", pending, {**grant, "browser": txn["browser"]}, TXN_TTL)
    except StoreFull:
        await send_page(send, 503, error_page("busy"))
        return
    client = await core.client(grant["client_id"])
    page = consent_page(client_name=client.display_name, client_id=client.client_id,
                        redirect_host=urlsplit(grant["redirect_uri"]).netloc or grant["redirect_uri"],
                        scopes=grant["scopes"], user=who.name or who.subject, server_name=core.server_name,
                        action=core.url("/oauth/consent"), pending=pending,
                        csrf=core.keys.csrf(pending, txn["browser"]), vouched=client.kind == "configured")
    await send_page(send, 200, page)


def _consent_key(grant: dict[str, Any]) -> str:
    """Consent is remembered per user (subject and tenant), client and redirect URI: a client
    whose metadata now sends users elsewhere asks again."""
    raw = "\x00".join((grant["sub"], grant.get("tid") or "", grant["client_id"], grant["redirect_uri"]))
    return hashlib.sha256(raw.encode()).hexdigest()


async def _answer(core: ProxyCore, send: Send, grant: dict[str, Any]) -> None:
    try:
        code = await core.issue_code(grant)
    except StoreFull:
        await send_page(send, 503, error_page("busy"))
        return
    await redirect(send, redirect_with(grant["redirect_uri"], {"code": code, "state": grant["state"],
                                                               "iss": core.issuer}), status=303)


async def consent(core: ProxyCore, scope: Scope, send: Send, form: dict[str, str]) -> None:
    """``POST /oauth/consent``: the user allowed or denied."""
    site = header(scope, b"sec-fetch-site")
    origin = header(scope, b"origin")
    if site == "cross-site" or (origin is not None and origin != "null"
                                and origin.rstrip("/") != _origin(core.issuer)):
        await send_page(send, 403, error_page("csrf"))
        return
    pending, token, browser = form.get("pending", ""), form.get("csrf", ""), browser_of(scope)
    if not pending or not token or browser is None or not core.keys.csrf_ok(token, pending, browser):
        await send_page(send, 403, error_page("csrf"))
        return
    grant = await core.store.take("pending", pending)
    if grant is None:
        await send_page(send, 400, error_page("expired"))
        return
    if grant.pop("browser") != browser:
        await send_page(send, 403, error_page("csrf"))
        return
    if form.get("decision") != "allow":
        await _to_client(core, send, grant["redirect_uri"], grant["state"], "access_denied", "the user denied access")
        return
    if core.consent_ttl > 0:
        try:
            await core.store.put("consent", _consent_key(grant), {"scopes": grant["scopes"]}, core.consent_ttl)
        except StoreFull:
            log.warning("consent not remembered: the store is full")
    await _answer(core, send, grant)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
