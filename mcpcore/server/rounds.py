"""Rounds of ``ctx.request_input``, one code path for both eras.

2026-07-28: the signal becomes an ``input_required`` result (its ``requestState`` sealed when a
key is configured); the client's retry re-enters the handler. 2025 era: the framework sends the
embedded requests to the client over the session, waits for the answers, and re-enters the
handler itself, up to ``MCP_MAX_INPUT_ROUNDS`` times.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..context import RequestScope
from ..context.inputs import InputRequest, InputRequired, InputRequiredSpec
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.versions import Era

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

__all__ = ["run_rounds"]

log = logging.getLogger("mcpcore.server")


def _principal(scope: RequestScope) -> dict[str, str]:
    auth = scope.auth
    return {"client_id": auth.client_id if auth else "", "subject": (auth.subject or "") if auth else "",
            "tenant": scope.tenant_id or ""}


def _result(d: Dispatcher, spec: InputRequiredSpec, scope: RequestScope, operation: str) -> dict[str, Any]:
    out: dict[str, Any] = {"resultType": "input_required"}
    if spec.input_requests:
        out["inputRequests"] = {k: r.to_wire() for k, r in spec.input_requests.items()}
    if spec.request_state is not None:
        sealer = d.sealer
        out["requestState"] = sealer.seal(spec.request_state, operation=operation, **_principal(scope)) \
            if sealer is not None else spec.request_state
    return out


async def _ask(scope: RequestScope, key: str, req: InputRequest) -> tuple[str, dict[str, Any]]:
    params = dict(req.params)
    if req.method == "elicitation/create" and params.get("mode") == "url":
        params.setdefault("elicitationId", str(uuid.uuid4()))
    try:
        return key, await scope.outbound.request(req.method, params)
    except McpError as exc:
        raise McpError(exc.code if exc.code != JsonRpcErrorCode.MethodNotFound else JsonRpcErrorCode.InvalidRequest,
                       f"The client could not complete {req.method}: {exc.message}",
                       {"reason": "client_request_failed", "method": req.method}) from exc


async def run_rounds(d: Dispatcher, scope: RequestScope, operation: str,
                     attempt: Callable[[], Awaitable[dict[str, Any]]],
                     first: InputRequired | None = None) -> dict[str, Any]:
    """Run ``attempt`` (which calls the handler once) until it returns a result; ``first`` is a
    question the handler already asked (its first attempt ran)."""
    if scope.request_state is not None and d.sealer is not None:
        scope.request_state = d.sealer.unseal(scope.request_state, operation=operation, **_principal(scope))
    rounds = 0
    pending = first
    while True:
        if pending is not None:
            spec = pending.spec
            pending = None
        else:
            try:
                return await attempt()
            except InputRequired as sig:
                spec = sig.spec
        if scope.era is Era.MODERN:
            return _result(d, spec, scope, operation)
        rounds += 1
        if rounds > d.settings.max_input_rounds:
            raise McpError(JsonRpcErrorCode.InternalError,
                           f"{operation} asked the client for input more than {d.settings.max_input_rounds} times.",
                           {"reason": "too_many_input_rounds"})
        answers = await asyncio.gather(*(_ask(scope, k, r) for k, r in spec.input_requests.items()))
        scope.input_responses = dict(answers)
        scope.request_state = spec.request_state
