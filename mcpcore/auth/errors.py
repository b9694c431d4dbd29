"""``AuthError``: why a request was refused, as an HTTP status, an RFC 6750 challenge and a JSON-RPC error.

Statuses and challenges (RFC 6750 §3, RFC 9728 §5.1, MCP authorization):

======  ======================  ==========================================================
status  ``error``               when
======  ======================  ==========================================================
401     (none)                  no ``Authorization`` header, or a scheme other than Bearer
                                (RFC 6750 §3.1: no error code when no credentials were sent)
400     ``invalid_request``     ``Bearer`` with an empty or malformed token
401     ``invalid_token``       bad signature, expired, wrong issuer/audience, unknown key,
                                missing client id, invalid tenant id, ...
403     ``invalid_token``       the token is valid but not issued for this resource (RFC 8707)
403     ``insufficient_scope``  the caller lacks scopes an operation requires
503     (none)                  the issuer's signing keys cannot be fetched (no challenge:
                                the token may be fine, the client should retry, not re-authorise)
401     ``invalid_dpop_proof``  (``MCP_AUTH_DPOP``) the DPoP proof is missing, malformed or
                                does not match the request (RFC 9449 §7.1)
401     ``use_dpop_nonce``      (``MCP_AUTH_DPOP``) the proof lacks the server's current nonce,
                                sent in ``DPoP-Nonce`` (RFC 9449 §9)
======  ======================  ==========================================================

A refusal under DPoP answers with the ``DPoP`` scheme (``scheme``) and its ``algs`` parameter,
and, while plain bearer tokens are still accepted, a second challenge for the other scheme
(``also``), as RFC 9449 §7.2 shows: ``Bearer realm="mcp", ..., DPoP algs="ES256"``.

Every challenge carries ``realm="mcp"`` and ``resource_metadata`` (the RFC 9728 document URL).

Scope names and the client: the JSON-RPC error message of an insufficient-scope refusal is always
"Insufficient permissions." and never names a scope. The ``WWW-Authenticate`` header of an HTTP 403
does carry ``scope="..."`` with **all** scopes the operation requires (not the missing subset): RFC
6750 §3 and the MCP spec (2025-11-25 step-up, 2026-07-28 "list all scopes needed") rely on it so a
client can ask the authorization server for them, and the same names are already public in the
``scopes_supported`` list of the protected-resource metadata. Pass ``include_scope=False`` to
:meth:`AuthError.www_authenticate` to leave it out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from ..errors import JsonRpcErrorCode, McpError, error_object

__all__ = ["AuthError", "AuthErrorCode", "AuthStatus"]

AuthErrorCode = Literal["invalid_request", "invalid_token", "insufficient_scope", "invalid_dpop_proof",
                        "use_dpop_nonce"]
AuthStatus = Literal[400, 401, 403, 503]

_JSON_RPC_CODE: dict[int, JsonRpcErrorCode] = {
    400: JsonRpcErrorCode.InvalidRequest,
    401: JsonRpcErrorCode.Unauthorized,
    403: JsonRpcErrorCode.Forbidden,
    503: JsonRpcErrorCode.ServiceUnavailable,
}
# RFC 6750 §3: error_description and scope values are restricted to these characters.
_NOT_DESCRIPTION = re.compile(r'[^\x20\x21\x23-\x5b\x5d-\x7e]')
_SCOPE_TOKEN = re.compile(r'[\x21\x23-\x5b\x5d-\x7e]+')
_QUOTED_UNSAFE = re.compile(r'["\\\x00-\x1f\x7f]')

INSUFFICIENT_PERMISSIONS = "Insufficient permissions."


def _quoted(value: str) -> str:
    return '"' + _QUOTED_UNSAFE.sub("", value) + '"'


class AuthError(Exception):
    """A refused request: ``status``, RFC 6750 ``error`` code and a client-visible ``description``.

    Args:
        status: 400, 401, 403 or 503 (see the module table).
        error: the RFC 6750 error code, or ``None`` when none applies (no credentials; 503).
        description: a short, fixed, client-visible sentence; never a token, key or stack detail.
        reason: a stable machine reason for logs and metrics (``expired``, ``issuer``, ...).
        scopes: for ``insufficient_scope``, the scopes the operation requires (header only).
        retry_after: seconds, for a 503.
        scheme: the challenge's scheme, ``Bearer`` or ``DPoP``.
        params: more auth-params of the challenge (``(("algs", "ES256 PS256"),)``).
        also: a second challenge, for the other scheme a client may use.
        nonce: a fresh DPoP nonce for the ``DPoP-Nonce`` header.
    """

    def __init__(
        self,
        status: AuthStatus,
        error: AuthErrorCode | None,
        description: str,
        *,
        reason: str = "invalid",
        scopes: Sequence[str] = (),
        retry_after: int | None = None,
        scheme: str = "Bearer",
        params: Sequence[tuple[str, str]] = (),
        also: str | None = None,
        nonce: str | None = None,
    ) -> None:
        super().__init__(description)
        self.status: AuthStatus = status
        self.error: AuthErrorCode | None = error
        self.description = description
        self.reason = reason
        self.scopes: tuple[str, ...] = tuple(scopes)
        self.retry_after = retry_after
        self.scheme = scheme
        self.params: tuple[tuple[str, str], ...] = tuple(params)
        self.also = also
        self.nonce = nonce

    def __repr__(self) -> str:
        return (f"AuthError(status={self.status}, error={self.error!r}, description={self.description!r}, "
                f"reason={self.reason!r})")

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def missing(cls, description: str = "Authentication required.", *, reason: str = "missing") -> AuthError:
        """401 without an error code: no credentials (or an unsupported scheme) were sent."""
        return cls(401, None, description, reason=reason)

    @classmethod
    def invalid_request(cls, description: str = "Malformed Authorization header.", *,
                        reason: str = "malformed_header") -> AuthError:
        """400 ``invalid_request``: the credentials are syntactically broken."""
        return cls(400, "invalid_request", description, reason=reason)

    @classmethod
    def invalid_token(cls, description: str = "Token is invalid.", *, reason: str = "invalid") -> AuthError:
        """401 ``invalid_token``."""
        return cls(401, "invalid_token", description, reason=reason)

    @classmethod
    def wrong_resource(cls) -> AuthError:
        """403 ``invalid_token``: a valid token issued for another resource (RFC 8707)."""
        return cls(403, "invalid_token", "Token is not valid for this resource.", reason="resource")

    @classmethod
    def insufficient_scope(cls, required: Sequence[str] = ()) -> AuthError:
        """403 ``insufficient_scope``; ``required`` goes to the header's ``scope``, never to the message."""
        if isinstance(required, str):
            raise TypeError("required must be a sequence of scope names, not a string")
        return cls(403, "insufficient_scope", INSUFFICIENT_PERMISSIONS, reason="insufficient_scope",
                   scopes=required)

    @classmethod
    def unavailable(cls, retry_after: int = 5) -> AuthError:
        """503: the signing keys could not be fetched; the token was neither accepted nor rejected."""
        return cls(503, None, "Authorization keys are temporarily unavailable.", reason="jwks_unavailable",
                   retry_after=retry_after)

    # -- wire forms -----------------------------------------------------------------------------

    @property
    def json_rpc_code(self) -> int:
        """The JSON-RPC error code for the response body (-32006, -32005, -32600 or -32000)."""
        return int(_JSON_RPC_CODE.get(self.status, JsonRpcErrorCode.Unauthorized))

    def to_mcp_error(self) -> McpError:
        """The same refusal as an :class:`~mcpcore.errors.McpError`; its message never names a scope."""
        return McpError(self.json_rpc_code, self.description)

    def response_body(self, request_id: str | int | None = None) -> dict[str, Any]:
        """A JSON-RPC error response object for the HTTP body."""
        return {"jsonrpc": "2.0", "id": request_id, "error": error_object(self.json_rpc_code, self.description)}

    def www_authenticate(self, resource_metadata: str | None = None, *, realm: str = "mcp",
                         include_scope: bool = True) -> str | None:
        """The ``WWW-Authenticate`` value, or ``None`` for a 503 (which is not a challenge).

        ``Bearer realm="mcp", error="...", error_description="...", scope="...", resource_metadata="..."``;
        ``error``/``error_description`` are left out when no credentials were sent (RFC 6750 §3.1).
        Under DPoP the scheme is ``DPoP`` with ``algs="..."``, and :attr:`also` follows.
        """
        if self.status == 503:
            return None
        parts = [f"realm={_quoted(realm)}"]
        if self.error is not None:
            parts.append(f"error={_quoted(self.error)}")
            desc = _NOT_DESCRIPTION.sub("", self.description)
            if desc:
                parts.append(f"error_description={_quoted(desc)}")
        if include_scope and self.scopes:
            scopes = [s for s in dict.fromkeys(self.scopes) if _SCOPE_TOKEN.fullmatch(s)]
            if scopes:
                parts.append(f"scope={_quoted(' '.join(scopes))}")
        parts.extend(f"{name}={_quoted(value)}" for name, value in self.params)
        if resource_metadata:
            parts.append(f"resource_metadata={_quoted(resource_metadata)}")
        challenge = f"{self.scheme} " + ", ".join(parts)
        return challenge if self.also is None else f"{challenge}, {self.also}"

    def headers(self, resource_metadata: str | None = None, *, include_scope: bool = True) -> dict[str, str]:
        """Response headers: ``WWW-Authenticate`` (challenges), ``Retry-After`` (503), ``Cache-Control``,
        ``DPoP-Nonce`` (a nonce to use)."""
        out = {"Cache-Control": "no-store"}
        if self.nonce is not None:
            out["DPoP-Nonce"] = self.nonce
        challenge = self.www_authenticate(resource_metadata, include_scope=include_scope)
        if challenge is not None:
            out["WWW-Authenticate"] = challenge
        if self.status == 503 and self.retry_after is not None:
            out["Retry-After"] = str(self.retry_after)
        return out
