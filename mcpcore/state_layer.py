"""The state layer: ``ctx.state``, tenant-scoped storage, and the app-wide services every
request's context reaches (``ctx.values`` lives on the context itself)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .config import Settings
from .context import ContextServices
from .layer import Layer
from .storage.base import StorageProvider
from .storage.service import CursorSigner, StateService
from .store_kinds import StoreKind

__all__ = ["TenantState"]

log = logging.getLogger("mcpcore.app")


class TenantState(Layer):
    """Opens the ``ctx.state`` provider at startup (the app's ``storage=`` or the one
    ``STORAGE_PROVIDER_TYPE`` names) and hands every request's context the app's services.

    A provider unreachable at startup does not stop the app: ``/readyz`` reports it and a
    request that uses ``ctx.state`` gets a clear 503 until it answers.
    """

    title = "state"

    def __init__(self, services: ContextServices, given: StorageProvider | None, kind: StoreKind | None,
                 telemetry: Any = None) -> None:
        if given is None and (kind is None or kind.state is None):
            raise ValueError("the state layer needs a provider or a store kind that builds one")
        self.services = services
        self.given = given
        self.store_kind = kind
        self.telemetry = telemetry
        self._owned: StorageProvider | None = None
        self._retrying: asyncio.Task[None] | None = None

    def where(self) -> str:
        return "mcpcore.storage.service.StateService"

    async def startup(self, settings: Settings, redis: Any = None) -> None:
        provider = self.given
        if provider is None:
            assert self.store_kind is not None and self.store_kind.state is not None  # checked when built
            provider = self._owned = self.store_kind.state(settings)
        if self.given is None and self.store_kind is not None and self.store_kind.redis:
            # A wrong password or database stops startup; an unreachable Redis is retried meanwhile.
            from .redis_startup import check_redis  # imports redis: only when the state lives there

            try:
                self._retrying = await check_redis(provider.client, settings,  # type: ignore[attr-defined]
                                                   "ctx.state (STORAGE_PROVIDER_TYPE=redis)")
            except BaseException:
                await provider.close()
                raise
        else:
            try:
                await provider.ping()
            except Exception as exc:  # keep serving: /readyz reports it and requests get a clear 503
                log.error("ctx.state storage is unreachable at startup: %s", getattr(exc, "message", exc))
        signer = CursorSigner.from_settings(settings.storage_cursor_key, settings.request_state_key)
        self.services.state = StateService(provider, signer, self.telemetry)

    async def shutdown(self) -> None:
        if self._retrying is not None:
            self._retrying.cancel()
            self._retrying = None
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned.close()
