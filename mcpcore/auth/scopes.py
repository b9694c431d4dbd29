"""Scope checks: per-definition ``auth=[...]`` (framework) and ``check_scopes(ctx, [...])`` (handlers).

Rules (same as the reference framework):

- no-op when ``MCP_AUTH_MODE=none``, when ``MCP_AUTH_DISABLE_SCOPE_CHECKS=true``, or when nothing is
  required;
- auth on but no identity on the request → ``McpError(Unauthorized, "Authentication required.")``
  (fail closed);
- any required scope missing → ``McpError(Forbidden, "Insufficient permissions.")``. The error names
  no scope, neither in its message nor in ``data``.

Scopes match exactly (case-sensitive, no wildcards); every required scope must be held.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, overload

from ..context import AuthInfo
from ..errors import JsonRpcErrorCode, McpError
from .errors import INSUFFICIENT_PERMISSIONS

__all__ = ["HasAuth", "check_scopes", "has_scopes"]

AUTHENTICATION_REQUIRED = "Authentication required."


class HasAuth(Protocol):
    """Anything with ``.auth`` (a :class:`~mcpcore.Context`, a ``RequestContext``, a ``Inbound``)."""

    @property
    def auth(self) -> AuthInfo | None: ...


def has_scopes(held: Iterable[str], required: Iterable[str]) -> bool:
    """True when every scope of ``required`` is in ``held``."""
    have = set(held)
    return all(s in have for s in required)


@overload
def check_scopes(auth: AuthInfo | None, required: Sequence[str], *, auth_mode: str,
                 disabled: bool = False) -> None: ...


@overload
def check_scopes(auth: HasAuth, required: Sequence[str], *, auth_mode: str | None = None,
                 disabled: bool | None = None) -> None: ...


def check_scopes(auth: AuthInfo | HasAuth | None, required: Sequence[str], *, auth_mode: str | None = None,
                 disabled: bool | None = None) -> None:
    """Refuse the operation unless the caller holds every scope of ``required``.

    Two forms:

    - framework: ``check_scopes(scope.auth, tool.auth, auth_mode=settings.auth_mode,
      disabled=settings.auth_disable_scope_checks)``;
    - handlers: ``check_scopes(ctx, ["report:write"])``. The mode and the disable switch are read
      from the context's services (``auth_mode``, ``scope_checks_disabled``). When the services do
      not carry them (a hand-built context), a context with an identity is checked and one without
      is treated as auth-off.

    Raises:
        McpError: ``Unauthorized`` (-32006) with no identity while auth is on; ``Forbidden``
            (-32005) "Insufficient permissions." when a scope is missing.
        TypeError: ``required`` is a plain string (``"a:b"`` would be read as characters).
    """
    if isinstance(required, str):
        raise TypeError("required must be a sequence of scope names, not a string")
    if auth is None or isinstance(auth, AuthInfo):
        if auth_mode is None:
            raise TypeError("check_scopes(auth_info, ...) needs auth_mode=")
        info = auth
        mode = auth_mode
        off = bool(disabled)
    else:
        info = auth.auth
        holder = getattr(auth, "_scope", auth)  # a Context keeps its Inbound in ``_scope``
        services: Any = getattr(holder, "services", None)
        mode_found = getattr(services, "auth_mode", None)
        mode = auth_mode or (mode_found if isinstance(mode_found, str) else ("none" if info is None else "on"))
        off = disabled if disabled is not None else bool(getattr(services, "scope_checks_disabled", False))
    if not required or mode == "none" or off:
        return
    if info is None:
        raise McpError(JsonRpcErrorCode.Unauthorized, AUTHENTICATION_REQUIRED)
    if not has_scopes(info.scopes, required):
        raise McpError(JsonRpcErrorCode.Forbidden, INSUFFICIENT_PERMISSIONS)
