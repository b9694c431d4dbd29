"""``create_mock_context``: a real ``Context`` for calling handlers directly in unit tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..context import AuthInfo, CancelSignal, Context, ContextServices, NullOutbound, RequestScope
from ..errors import ErrorContract
from ..protocol.versions import LATEST_LEGACY, Era
from ..storage.memory import MemoryStorage
from ..storage.service import CursorSigner, StateService

__all__ = ["create_mock_context", "get_content_blocks", "get_enrichment"]


def create_mock_context(
    *,
    tenant_id: str | None = "default",
    request_id: str = "test-request-id",
    session_id: str | None = None,
    auth: AuthInfo | None = None,
    uri: str | None = None,
    client_capabilities: dict[str, Any] | None = None,
    errors: Sequence[ErrorContract] = (),
    signal: CancelSignal | None = None,
    state: StateService | None = None,
    progress_token: str | int | None = None,
    log_level: int | None = 0,
    on_notify: Callable[[dict[str, Any]], None] | None = None,
    operation: str | None = "test",
) -> Context:
    """A ``Context`` backed by a fresh in-memory ``ctx.state`` with the production rules.

    Messages the handler sends (logs, progress) are recorded in ``ctx.posted``; ``ctx.notify_*``
    calls go to ``on_notify`` (and are recorded in ``ctx.notified``).
    """
    notified: list[dict[str, Any]] = []

    def notify(event: dict[str, Any], _scope: RequestScope) -> None:
        notified.append(event)
        if on_notify is not None:
            on_notify(event)

    services = ContextServices(
        state=state or StateService(MemoryStorage(), CursorSigner([os.urandom(32)])),
        log_floor=0,
        notify=notify,
    )
    outbound = NullOutbound()
    scope = RequestScope(method="tools/call", jsonrpc_id=request_id, era=Era.LEGACY, protocol_version=LATEST_LEGACY,
                         services=services, outbound=outbound, session_id=session_id,
                         client_capabilities=client_capabilities, client_log_level=log_level,
                         progress_token=progress_token, auth=auth, tenant_id=tenant_id,
                         signal=signal or CancelSignal(), transport="test")
    ctx = MockContext(scope, operation=operation, errors=errors, uri=uri)
    ctx.posted = outbound.posted
    ctx.notified = notified
    return ctx


class MockContext(Context):
    """A ``Context`` that exposes what it sent."""

    __slots__ = ("notified", "posted")

    posted: list[dict[str, Any]]
    notified: list[dict[str, Any]]


def get_enrichment(ctx: Context) -> dict[str, Any]:
    """The fields a handler passed to ``ctx.enrich`` so far."""
    return dict(ctx._enrich.fields) if ctx._enrich is not None else {}


def get_content_blocks(ctx: Context) -> list[dict[str, Any]]:
    """The content blocks a handler collected through ``ctx.content``."""
    return list(ctx._content.blocks) if ctx._content is not None else []
