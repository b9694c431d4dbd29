"""``create_mock_context``: a real ``Context`` for calling handlers directly in unit tests."""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..context import AuthInfo, CancelSignal, Context, ContextServices, Inbound, NullOutbound
from ..context.inputs import InputRequired, InputRequiredSpec
from ..errors import ErrorContract
from ..protocol.versions import LATEST_LEGACY, MODERN_VERSIONS, Era
from ..storage.memory import MemoryStorage
from ..storage.service import CursorSigner, StateService

__all__ = ["create_mock_context", "expect_input_required", "get_content_blocks", "get_enrichment"]


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
    input_responses: dict[str, Any] | None = None,
    request_state: str | None = None,
    modern: bool = False,
) -> Context:
    """A ``Context`` backed by a fresh in-memory ``ctx.state`` with the production rules.

    Messages the handler sends (logs, progress) are recorded in ``ctx.posted``; ``ctx.notify_*``
    calls go to ``on_notify`` (and are recorded in ``ctx.notified``).

    ``input_responses`` and ``request_state`` seed ``ctx.inputs`` for a handler's later round.
    ``client_capabilities`` seeds ``ctx.client_capabilities`` and applies the production filter to
    the seeded responses; left out, every seeded response is kept (and ``ctx.request_input`` is
    not refused for a missing capability). ``modern=True`` serves the context as 2026-07-28.
    """
    caps_view = client_capabilities
    if caps_view is None:
        caps_view = {"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}}
    notified: list[dict[str, Any]] = []

    def notify(event: dict[str, Any], _req: Inbound) -> None:
        notified.append(event)
        if on_notify is not None:
            on_notify(event)

    services = ContextServices(
        state=state or StateService(MemoryStorage(), CursorSigner([os.urandom(32)])),
        log_floor=0,
        notify=notify,
        auth_mode="jwt" if auth is not None else "none",
    )
    outbound = NullOutbound()
    req = Inbound(method="tools/call", jsonrpc_id=request_id, era=Era.MODERN if modern else Era.LEGACY,
                         protocol_version=MODERN_VERSIONS[0] if modern else LATEST_LEGACY,
                         services=services, outbound=outbound, session_id=session_id,
                         client_capabilities=caps_view, client_log_level=log_level,
                         progress_token=progress_token, auth=auth, tenant_id=tenant_id,
                         signal=signal or CancelSignal(), transport="test", input_responses=input_responses,
                         request_state=request_state)
    ctx = MockContext(req, operation=operation, errors=errors, uri=uri)
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


async def expect_input_required(run: Awaitable[Any] | Callable[[], Any]) -> InputRequiredSpec:
    """Run a handler call and return what it asked for (its ``ctx.request_input`` spec).

    Raises:
        AssertionError: the handler returned or failed instead of asking.
    """
    try:
        result = run() if callable(run) else run
        if inspect.isawaitable(result):
            result = await result
    except InputRequired as sig:
        return sig.spec
    raise AssertionError(f"expected the handler to ask for input; it returned {result!r}")
