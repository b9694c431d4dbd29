"""Verified claims → :class:`~mcpcore.context.AuthInfo` (``ctx.auth``), and tenant id validation.

Mapping (same as the reference framework):

- ``client_id`` ← ``cid``, else ``client_id``: required, a non-empty printable string (≤ 256 chars),
  else 401 ``invalid_token``.
- ``scopes`` ← union, first-seen order, of ``scp`` (array or space-separated string), ``scope``
  (space-separated string, or an array as some issuers send) and ``mcp_tool_scopes`` (array or
  string). A claim of another type is 401. A token with no scopes is accepted (unlike the reference,
  which rejects it): it can call whatever declares no scopes, and scope-protected operations answer 403.
- ``subject`` ← ``sub`` (when present a non-empty printable string of ≤ 1024 chars, else 401: an empty
  subject would be the same principal as a token without one).
- ``tenant_id`` ← ``tid``, validated by :func:`is_valid_tenant_id`; absent → ``None`` (``ctx.state``
  then fails closed under jwt/oauth); present but invalid → 401.
- ``expires_at`` ← ``exp`` (a NumericDate when present, else 401: PyJWT accepts a numeric string);
  ``claims`` keeps the whole payload; ``token`` the raw bearer token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..context import AuthInfo
from .errors import AuthError

__all__ = ["TENANT_ID_MAX_LENGTH", "auth_info_from_claims", "claim_strings", "is_valid_tenant_id", "names_resource",
           "scopes_from_claims"]

TENANT_ID_MAX_LENGTH = 128
CLIENT_ID_MAX_LENGTH = 256
_TENANT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SCOPE_CLAIMS = ("scp", "scope", "mcp_tool_scopes")


def is_valid_tenant_id(value: object) -> bool:
    """True for a tenant id of ≤ 128 ASCII chars from ``[A-Za-z0-9._-]``, alphanumeric at both ends,
    without ``..``."""
    return (isinstance(value, str) and len(value) <= TENANT_ID_MAX_LENGTH and ".." not in value
            and _TENANT.fullmatch(value) is not None)


def _scope_list(name: str, value: object) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if not isinstance(item, str):
                raise ValueError(name)
            out.extend(item.split())
        return out
    raise ValueError(name)


def scopes_from_claims(claims: Mapping[str, Any]) -> tuple[str, ...]:
    """The union of ``scp``, ``scope`` and ``mcp_tool_scopes``, deduplicated in first-seen order.

    Raises:
        ValueError: a scope claim is neither a string nor an array of strings (message: the claim).
    """
    seen: dict[str, None] = {}
    for name in SCOPE_CLAIMS:
        value = claims.get(name)
        if value is None:
            continue
        for s in _scope_list(name, value):
            seen.setdefault(s, None)
    return tuple(seen)


def auth_info_from_claims(claims: Mapping[str, Any], token: str | None = None) -> AuthInfo:
    """Build ``ctx.auth`` from a verified payload.

    Raises:
        AuthError: 401 ``invalid_token`` for a missing client id, malformed scope claims, a
            non-string subject or an invalid tenant id.
    """
    client_id = claims.get("cid")
    if client_id is None:
        client_id = claims.get("client_id")
    if (not isinstance(client_id, str) or not client_id.strip() or len(client_id) > CLIENT_ID_MAX_LENGTH
            or _CONTROL.search(client_id)):
        raise AuthError.invalid_token("Token is missing a valid client id (cid or client_id).", reason="client_id")
    try:
        scopes = scopes_from_claims(claims)
    except ValueError:
        raise AuthError.invalid_token("Token scope claims are malformed.", reason="scopes") from None
    subject = claims.get("sub")
    if subject is not None and (not isinstance(subject, str) or not subject.strip() or len(subject) > 1024
                                or _CONTROL.search(subject)):
        # An empty subject would be the same principal as a token with none.
        raise AuthError.invalid_token("Token subject (sub) is invalid.", reason="subject")
    tenant = claims.get("tid")
    if tenant is not None and not is_valid_tenant_id(tenant):
        raise AuthError.invalid_token("Token tenant id (tid) is invalid.", reason="tenant")
    exp = claims.get("exp")
    if exp is not None and (not isinstance(exp, (int, float)) or isinstance(exp, bool)):
        raise AuthError.invalid_token("Token expiry (exp) must be a number.", reason="expiry")
    expires_at = int(exp) if exp is not None else None
    return AuthInfo(client_id=client_id, scopes=scopes, subject=subject, tenant_id=tenant,
                    expires_at=expires_at, token=token, claims=dict(claims))


def claim_strings(value: object) -> list[str]:
    """A claim that is a string or an array of strings, as a list (anything else: empty)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _no_slash(v: str) -> str:
    return v[:-1] if v.endswith("/") else v


def names_resource(claims: Mapping[str, Any], resource: str) -> bool:
    """RFC 8707: whether ``resource`` is among the claims' ``resource`` and ``aud`` values (a
    trailing slash on either side ignored)."""
    want = _no_slash(resource)
    return any(_no_slash(v) == want for v in claim_strings(claims.get("resource")) + claim_strings(claims.get("aud")))
