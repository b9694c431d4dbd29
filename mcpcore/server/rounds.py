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

from ..context import Inbound
from ..context.inputs import InputRequest, InputRequired, InputRequiredSpec
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.versions import Era

if TYPE_CHECKING:
    from .core import ServerCore

__all__ = ["input_required_result", "run_rounds", "unseal"]

log = logging.getLogger("mcpcore.server")


def _principal(req: Inbound) -> dict[str, str]:
    auth = req.auth
    return {"client_id": auth.client_id if auth else "", "subject": (auth.subject or "") if auth else "",
            "tenant": req.tenant_id or ""}


def input_required_result(core: ServerCore, spec: InputRequiredSpec, req: Inbound, operation: str) -> dict[str, Any]:
    """The 2026-07-28 ``input_required`` answer to ``spec`` (its request state sealed when a key
    is configured)."""
    out: dict[str, Any] = {"resultType": "input_required"}
    if spec.input_requests:
        out["inputRequests"] = {k: r.to_wire() for k, r in spec.input_requests.items()}
    if spec.request_state is not None:
        sealer = core.sealer
        out["requestState"] = sealer.seal(spec.request_state, operation=operation, **_principal(req)) \
            if sealer is not None else spec.request_state
    return out


async def _ask(req: Inbound, key: str, wanted: InputRequest) -> tuple[str, dict[str, Any]]:
    params = dict(wanted.params)
    if wanted.method == "elicitation/create" and params.get("mode") == "url":
        params.setdefault("elicitationId", str(uuid.uuid4()))
    try:
        return key, await req.outbound.request(wanted.method, params)
    except McpError as exc:
        raise McpError(exc.code if exc.code != JsonRpcErrorCode.MethodNotFound else JsonRpcErrorCode.InvalidRequest,
                       f"The client could not complete {wanted.method}: {exc.message}",
                       {"reason": "client_request_failed", "method": wanted.method}) from exc


def unseal(core: ServerCore, req: Inbound, operation: str) -> None:
    """Replace the request's sealed ``requestState`` by what was sealed (when a key is set);
    raises ``InvalidParams`` (``reason = "invalid_request_state"``) when it does not verify."""
    if req.request_state is not None and core.sealer is not None:
        req.request_state = core.sealer.unseal(req.request_state, operation=operation, **_principal(req))


async def run_rounds(core: ServerCore, req: Inbound, operation: str,
                     attempt: Callable[[], Awaitable[dict[str, Any]]],
                     first: InputRequired | None = None) -> dict[str, Any]:
    """Run ``attempt`` (which calls the handler once) until it returns a result; ``first`` is a
    question the handler already asked (its first attempt ran). The request's state is
    already unsealed (:func:`unseal`)."""
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
        if req.era is Era.MODERN:
            return input_required_result(core, spec, req, operation)
        rounds += 1
        if rounds > core.settings.max_input_rounds:
            raise McpError(JsonRpcErrorCode.InternalError,
                           f"{operation} asked the client for input more than {core.settings.max_input_rounds} times.",
                           {"reason": "too_many_input_rounds"})
        answers = await asyncio.gather(*(_ask(req, k, r) for k, r in spec.input_requests.items()))
        req.input_responses = dict(answers)
        req.request_state = spec.request_state
