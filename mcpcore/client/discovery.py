"""The discovery and registration steps of :class:`~mcpcore.client.OAuth`: the challenge, the
protected-resource metadata (RFC 9728), the authorization server's metadata (RFC 8414 / OpenID
discovery), and the client to sign in as (configured, a client ID metadata document, or dynamic
registration, RFC 7591)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import JsonRpcErrorCode, McpError

__all__ = ["OAuthError", "choose_client", "discover", "get_json", "meta_method", "origin", "parse_challenge", "pkce",
           "same_redirect", "well_known"]

_PARAM = re.compile(r'([\w-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]+)')


class OAuthError(McpError):
    """A sign-in that could not be completed; the message is one line that says what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(JsonRpcErrorCode.Unauthorized, message)
        self.http_status = 401


def parse_challenge(header: str | None) -> dict[str, str]:
    """The parameters of the ``Bearer`` challenge in a ``WWW-Authenticate`` value
    (``error``, ``scope``, ``resource_metadata``, ...); ``{}`` when there is none."""
    if not header:
        return {}
    found = re.search(r"(?i)\bbearer\b", header)
    if found is None:
        return {}
    rest = header[found.end():]
    nxt = re.search(r"(?i)(?:^|,)\s*(?:dpop|basic|digest|negotiate)\s", rest)
    rest = rest[: nxt.start()] if nxt else rest
    return {k.lower(): (v[1:-1].replace('\\"', '"').replace("\\\\", "\\") if v.startswith('"') else v)
            for k, v in _PARAM.findall(rest)}


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lower-cased."""
    p = urlsplit(url)
    return f"{p.scheme}://{p.netloc}".lower()


def pkce() -> tuple[str, str]:
    """A PKCE ``(verifier, S256 challenge)`` (RFC 7636)."""
    verifier = secrets.token_urlsafe(64)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def well_known(url: str, name: str) -> list[str]:
    """RFC 8414 / 9728 locations of ``url``'s document ``name`` (path-inserted first, then root)."""
    p = urlsplit(url)
    path = p.path.rstrip("/")
    base = f"{p.scheme}://{p.netloc}/.well-known/{name}"
    return list(dict.fromkeys([base + path, base] if path else [base]))


def same_redirect(a: str, b: str) -> bool:
    """Equal, or both loopback ``http`` URIs that differ in their port only (RFC 8252)."""
    if a == b:
        return True
    pa, pb = urlsplit(a), urlsplit(b)
    loop = ("127.0.0.1", "localhost", "::1")
    return (pa.scheme == pb.scheme == "http" and pa.hostname == pb.hostname and pa.hostname in loop
            and pa.path == pb.path)


async def get_json(http: httpx.AsyncClient, url: str) -> dict[str, Any] | None:
    """The JSON object at ``url``, or ``None`` (unreachable, not 200, not an object)."""
    try:
        resp = await http.get(url, headers={"accept": "application/json"})
    except httpx.HTTPError:
        return None
    if resp.status_code != 200:
        return None
    try:
        doc = resp.json()
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None

async def discover(http: httpx.AsyncClient, server: str,
                   challenge: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The protected-resource metadata of ``server`` (RFC 9728; its ``resource`` checked) and
    its authorization server's metadata (RFC 8414 or OpenID discovery; PKCE S256 required)."""
    pointer = challenge.get("resource_metadata")
    prm = None
    for url in [pointer] if pointer else well_known(server, "oauth-protected-resource"):
        prm = await get_json(http, url)
        if prm is not None:
            break
    if prm is None:
        where = f"at {pointer}" if pointer else "(RFC 9728)"
        raise OAuthError(f"{server} wants credentials but publishes no protected-resource metadata {where}: "
                         "pass a bearer token instead (auth='TOKEN', or --token)")
    resource = str(prm.get("resource") or server)
    if origin(resource) != origin(server) or not server.rstrip("/").startswith(resource.rstrip("/")):
        raise OAuthError(f"the protected-resource metadata is for {resource}, not {server}: refusing to sign "
                         "in for another resource")
    servers = prm.get("authorization_servers")
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
        raise OAuthError(f"the protected-resource metadata of {server} names no authorization server")
    issuer = servers[0]
    meta = None
    candidates = well_known(issuer, "oauth-authorization-server") + well_known(issuer, "openid-configuration")
    candidates.append(issuer.rstrip("/") + "/.well-known/openid-configuration")
    for url in dict.fromkeys(candidates):
        doc = await get_json(http, url)
        if doc is not None and str(doc.get("issuer", "")).rstrip("/") == issuer.rstrip("/"):
            meta = doc
            break
    if meta is None:
        raise OAuthError(f"cannot read the metadata of the authorization server {issuer} (RFC 8414 or OpenID "
                         "discovery): check that it is running and that the server names it right")
    if "S256" not in (meta.get("code_challenge_methods_supported") or []):
        raise OAuthError(f"the authorization server {issuer} does not offer PKCE with S256, which MCP requires: "
                         "this client will not sign in there")
    for key in ("authorization_endpoint", "token_endpoint"):
        if not isinstance(meta.get(key), str):
            raise OAuthError(f"the authorization server {issuer} publishes no {key}")
    return {**prm, "resource": resource}, meta


async def choose_client(http: httpx.AsyncClient, meta: Mapping[str, Any], stored: Mapping[str, Any] | None,
                        redirect_uri: str, scopes: Sequence[str], *, client_id: str | None,
                        client_secret: str | None, client_metadata_url: str | None,
                        client_name: str) -> dict[str, Any]:
    """The client to sign in as: the one configured (``client_id``), the metadata document
    (``client_metadata_url``, when the server takes them), the one registered before (``stored``,
    same issuer and redirect URI), or one registered now (RFC 7591)."""
    issuer = str(meta["issuer"])
    if client_id:
        return {"client_id": client_id, "client_secret": client_secret, "issuer": issuer,
                "method": meta_method(meta) if client_secret else "none"}
    if client_metadata_url and meta.get("client_id_metadata_document_supported"):
        return {"client_id": client_metadata_url, "issuer": issuer, "method": "none"}
    if stored and stored.get("issuer") == issuer and stored.get("registered") \
            and same_redirect(str(stored.get("redirect_uri")), redirect_uri):
        return dict(stored)
    endpoint = meta.get("registration_endpoint")
    if not isinstance(endpoint, str):
        raise OAuthError(f"the authorization server {issuer} takes neither client metadata documents nor dynamic "
                         "registration: register a client there and pass its id (client_id=, or --oauth-client)")
    doc: dict[str, Any] = {"client_name": client_name, "redirect_uris": [redirect_uri],
                           "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                           "token_endpoint_auth_method": "none"}
    if scopes:
        doc["scope"] = " ".join(scopes)
    try:
        resp = await http.post(endpoint, json=doc, headers={"accept": "application/json"})
        body = resp.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise OAuthError(f"dynamic registration at {endpoint} failed: {exc}") from None
    if resp.status_code not in (200, 201) or not isinstance(body, dict) or not body.get("client_id"):
        err = body if isinstance(body, dict) else {}
        raise OAuthError(f"dynamic registration at {endpoint} was refused: {err.get('error', resp.status_code)} "
                         f"{err.get('error_description', '')}".rstrip())
    return {"client_id": body["client_id"], "client_secret": body.get("client_secret"), "issuer": issuer,
            "method": body.get("token_endpoint_auth_method", "none"), "redirect_uri": redirect_uri,
            "registered": True}


def meta_method(meta: Mapping[str, Any]) -> str:
    """How a configured client with a secret authenticates at the token endpoint."""
    methods = meta.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    return "client_secret_post" if "client_secret_post" in methods and "client_secret_basic" not in methods \
        else "client_secret_basic"
