"""``POST /oauth/register``: RFC 7591 dynamic client registration, bounded.

- At most ``OAUTH_PROXY_REGISTRATIONS_PER_MINUTE`` per source address (429 ``slow_down`` past
  it, with ``Retry-After``), and at most ``OAUTH_PROXY_MAX_REGISTRATIONS`` live at once (503
  ``temporarily_unavailable``); a registration lives as long as a refresh token may.
- The body is JSON of at most 16 KiB. ``redirect_uris`` is required (1 to 20, each checked:
  https, or http on loopback, or a native app's private scheme; no fragment); the grant and
  response types must be ours; ``token_endpoint_auth_method`` ``none`` (the default for the public
  clients MCP clients are), ``client_secret_post`` or ``client_secret_basic`` (a secret is then
  issued; only its hash is kept).
- A refused registration stores nothing.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Any

from ... import _json
from ...asgi_types import Scope, Send
from .clients import ClientError, validate_redirect_uri
from .core import ProxyCore
from .web import send_json

__all__ = ["register"]

_METHODS = ("none", "client_secret_post", "client_secret_basic")


def _metadata(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise ClientError("invalid_client_metadata", "the body must be a JSON object")
    uris = doc.get("redirect_uris")
    if not isinstance(uris, list) or not 1 <= len(uris) <= 20:
        raise ClientError("invalid_redirect_uri", "redirect_uris must be a list of 1 to 20 URIs")
    checked = [validate_redirect_uri(u) for u in uris]
    method = doc.get("token_endpoint_auth_method", "none")
    if method not in _METHODS:
        raise ClientError("invalid_client_metadata", f"token_endpoint_auth_method must be one of {', '.join(_METHODS)}")
    grants = doc.get("grant_types", ["authorization_code", "refresh_token"])
    if not isinstance(grants, list) or not set(grants) <= {"authorization_code", "refresh_token"}:
        raise ClientError("invalid_client_metadata", "grant_types may be authorization_code and refresh_token")
    responses = doc.get("response_types", ["code"])
    if not isinstance(responses, list) or not set(responses) <= {"code"}:
        raise ClientError("invalid_client_metadata", "response_types may only be code")
    name = doc.get("client_name")
    if name is not None and (not isinstance(name, str) or len(name) > 200):
        raise ClientError("invalid_client_metadata", "client_name must be a string of at most 200 characters")
    return {"redirect_uris": checked, "token_endpoint_auth_method": method, "grant_types": grants,
            "response_types": responses, **({"client_name": name} if name else {})}


async def register(core: ProxyCore, scope: Scope, send: Send, body: bytes) -> None:
    """Register a client (see the module docstring)."""
    peer = scope.get("client")
    source = peer[0] if peer else "unknown"
    if await core.store.hit("register-rate", source, 60) > core.registrations_per_minute:
        await send_json(send, 429, {"error": "slow_down", "error_description": "too many registrations from this "
                                    "address; try again in a minute"}, [(b"retry-after", b"60")])
        return
    try:
        meta = _metadata(_json.loads(body))
    except ValueError:
        await send_json(send, 400, {"error": "invalid_client_metadata", "error_description": "the body is not JSON"})
        return
    except ClientError as e:
        await send_json(send, 400, {"error": e.error, "error_description": str(e)})
        return
    client_id = f"mcp-{secrets.token_urlsafe(18)}"
    ttl = core.refresh_ttl + 86_400
    if not await core.store.enroll("registrations", client_id, ttl, core.max_registrations):
        await send_json(send, 503, {"error": "temporarily_unavailable",
                                    "error_description": "this server holds as many registrations as it may"},
                        [(b"retry-after", b"3600")])
        return
    record: dict[str, Any] = {"redirect_uris": meta["redirect_uris"], "auth_method": meta["token_endpoint_auth_method"],
                              "client_name": meta.get("client_name")}
    answer: dict[str, Any] = {"client_id": client_id, "client_id_issued_at": int(time.time()), **meta}
    if meta["token_endpoint_auth_method"] != "none":
        secret = secrets.token_urlsafe(32)
        record["secret_hash"] = hashlib.sha256(secret.encode()).hexdigest()
        answer.update(client_secret=secret, client_secret_expires_at=0)
    await core.store.put("client", client_id, record, ttl)
    await send_json(send, 201, answer)
