"""What travels back to a proxied call's caller: the backend's messages during the call (progress,
logs, its questions), its errors, and completions asked of it."""

from __future__ import annotations

from typing import Any, Protocol

from ..context import Inbound
from ..errors import JsonRpcErrorCode, McpError
from ..logs import LEVELS
from ..protocol.versions import Era
from .backend import Relay

__all__ = ["Caller", "Completions", "backend_error", "relay_to"]


class Caller(Protocol):
    """What completions are asked through (a :class:`~mcpcore.compose.Proxy`)."""

    async def call(self, method: str, params: dict[str, Any], req: Inbound | None, *, tool: bool = False,
                   ) -> dict[str, Any]: ...


def backend_error(exc: McpError) -> McpError:
    """The backend's error as the caller gets it: as it was, except a refusal of the proxy's own
    credentials, which must not read as the caller's (no 401/403 challenge to the caller)."""
    data = exc.data or {}
    if exc.code == JsonRpcErrorCode.Unauthorized or (exc.code == JsonRpcErrorCode.Forbidden
                                                     and data.get("reason") == "insufficient_scope"):
        return McpError(JsonRpcErrorCode.Forbidden, f"The backend refused the proxy's credentials: {exc.message}",
                        {**data, "reason": "backend_refused_credentials", "backendCode": exc.code})
    return exc


class Completions(dict[str, Any]):
    """A proxied prompt's or template's completions: every argument is completed by the backend."""

    def __init__(self, owner: Caller, ref: dict[str, Any]) -> None:
        super().__init__()
        self.owner = owner
        self.ref = ref

    def get(self, argument: str, default: Any = None) -> Any:
        async def complete(value: str, context: dict[str, Any]) -> list[str]:
            params = {"ref": self.ref, "argument": {"name": argument, "value": value}}
            if context:
                params["context"] = {"arguments": context}
            found = await self.owner.call("completion/complete", params, None)
            values = (found.get("completion") or {}).get("values")
            return [str(v) for v in values] if isinstance(values, list) else []
        return complete


def relay_to(req: Inbound | None) -> Relay:
    async def relay(msg: dict[str, Any]) -> dict[str, Any] | None:
        method = msg.get("method")
        if req is None:
            if "id" in msg:
                raise McpError(JsonRpcErrorCode.MethodNotFound, "the proxy has no caller to ask")
            return None
        if "id" not in msg:
            if method == "notifications/message":
                level = LEVELS.get(str((msg.get("params") or {}).get("level")), 0)
                floor = req.client_log_level
                if (floor is None and req.era is Era.MODERN) or (floor is not None and level < floor):
                    return None
            if method in ("notifications/progress", "notifications/message"):
                req.outbound.post(msg)
            return None
        if req.era is not Era.LEGACY:
            raise McpError(JsonRpcErrorCode.MissingRequiredClientCapability,
                           "a 2026-07-28 caller cannot be asked in the middle of a request to a 2025 backend")
        answer: dict[str, Any] = await req.outbound.request(str(method), msg.get("params") or {})
        return answer
    return relay
