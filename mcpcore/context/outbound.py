"""The seam between a request's handler and its transport: how notifications and
server-to-client requests leave while the request runs."""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import JsonRpcErrorCode, McpError

__all__ = ["DiscardOutbound", "NullOutbound", "Outbound"]


class Outbound(Protocol):
    """A request's outgoing channel, implemented by each transport.

    ``post`` queues a notification related to the request (it is written before the request's
    response); ``drain`` waits until everything posted so far is written; ``request`` sends a
    server-to-client JSON-RPC request and returns its result (2025-era connections only).
    """

    def post(self, message: dict[str, Any]) -> None: ...

    async def drain(self) -> None: ...

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]: ...


class NullOutbound:
    """Drops notifications; refuses server-to-client requests. For tests and background scopes."""

    def __init__(self) -> None:
        self.posted: list[dict[str, Any]] = []

    def post(self, message: dict[str, Any]) -> None:
        self.posted.append(message)

    async def drain(self) -> None:
        return None

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        raise McpError(JsonRpcErrorCode.InvalidRequest, "This connection cannot carry requests to the client.")


class DiscardOutbound(NullOutbound):
    """Drops notifications without keeping them (the default of an Inbound built without one)."""

    def post(self, message: dict[str, Any]) -> None:
        return None
