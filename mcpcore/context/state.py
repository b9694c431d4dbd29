"""``ctx.state``: tenant-scoped key-value storage with the shared rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, overload

from ..errors import JsonRpcErrorCode, McpError

if TYPE_CHECKING:
    from ..storage.service import StateService

__all__ = ["ContextState", "StateItem", "StatePage"]

T = TypeVar("T")


class StateItem(NamedTuple):
    key: str
    value: Any


@dataclass(frozen=True, slots=True)
class StatePage:
    """One page of :meth:`ContextState.list`; ``cursor`` is ``None`` on the last page."""

    items: list[StateItem] = field(default_factory=list)
    cursor: str | None = None


class ContextState:
    """Tenant-scoped key-value store. Values round-trip as JSON on every provider.

    Keys match ``^[a-zA-Z0-9_.\\-/]+$`` (at most 1024 characters, no ``..``; ``/`` separates
    namespaces). Without a tenant every call raises ``McpError(InvalidRequest)`` (fail closed).
    TTLs are in seconds.
    """

    __slots__ = ("_service", "_tenant")

    def __init__(self, service: StateService | None, tenant_id: str | None) -> None:
        self._service = service
        self._tenant = tenant_id

    def _svc(self) -> StateService:
        if self._service is None:
            raise McpError(JsonRpcErrorCode.ConfigurationError, "No state storage is configured for this context.")
        return self._service

    @overload
    async def get(self, key: str) -> Any: ...
    @overload
    async def get(self, key: str, model: type[T]) -> T | None: ...
    async def get(self, key: str, model: Any = None) -> Any:
        """The value at ``key`` or ``None``; validated into ``model`` when given."""
        return await self._svc().get(self._tenant, key, model)

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        """Store any JSON value (pydantic models are dumped); ``ttl`` in seconds."""
        await self._svc().set(self._tenant, key, value, ttl)

    async def delete(self, key: str) -> bool:
        """Delete ``key``; ``True`` when something was deleted."""
        return await self._svc().delete(self._tenant, key)

    @overload
    async def take(self, key: str) -> Any: ...
    @overload
    async def take(self, key: str, model: type[T]) -> T | None: ...
    async def take(self, key: str, model: Any = None) -> Any:
        """Atomically read and delete ``key``: of any number of concurrent callers, exactly one
        receives the value (across processes on shared providers). For single-use records."""
        return await self._svc().take(self._tenant, key, model)

    async def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        """The values of the keys that exist."""
        return await self._svc().get_many(self._tenant, keys)

    async def set_many(self, entries: Mapping[str, Any] | Iterable[tuple[str, Any]], *,
                       ttl: float | None = None) -> None:
        """Store several values; one value that is not JSON rejects the whole batch."""
        await self._svc().set_many(self._tenant, entries, ttl)

    async def delete_many(self, keys: Sequence[str]) -> int:
        """Delete several keys; the number deleted."""
        return await self._svc().delete_many(self._tenant, keys)

    async def list(self, prefix: str = "", *, cursor: str | None = None, limit: int | None = None) -> StatePage:
        """Keys under ``prefix`` in key order with their values, a page at a time."""
        page = await self._svc().list(self._tenant, prefix, cursor, limit)
        return StatePage([StateItem(i["key"], i["value"]) for i in page["items"]], page.get("cursor"))
