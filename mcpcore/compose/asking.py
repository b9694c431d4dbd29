"""A 2025 backend's questions asked of a 2026-07-28 caller, across the caller's retries.

A 2025 backend asks (elicitation, sampling, roots) on the open stream of the call and waits
there for the answer; a 2026-07-28 caller answers by sending the call again with
``inputResponses``. So the proxy keeps the backend's call running in a task, answers the caller
``input_required`` with the question and a ``requestState`` naming that task, and hands the
answers of the retry to the waiting backend. The pending call lives in this process: a retry
must reach the instance that holds it (one instance, or sticky routing); elsewhere it is
refused with ``-32602`` and ``reason: input_state_unknown``, as is a retry after
:data:`ANSWER_WITHIN_S` (the backend's call is then cancelled) or from another caller.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from ..context import Inbound
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.versions import Era
from .backend import HttpBackend, Relay
from .messages import caller_key
from .relay import relay_to
from .stdio import StdioBackend

__all__ = ["ANSWER_WITHIN_S", "STATE_PREFIX", "Asking", "answer_rounds"]
_ASKING = frozenset({"tools/call", "prompts/get", "resources/read"})

ANSWER_WITHIN_S = 300.0
"""How long a backend's question waits for the caller's retry."""
STATE_PREFIX = "mcpcore-proxy-ask:"

Send = Callable[[Relay], Awaitable[dict[str, Any]]]


class _Pending:
    __slots__ = ("answer", "call", "caller", "expiry", "questions", "req")

    def __init__(self, caller: str, req: Inbound) -> None:
        self.caller = caller
        self.req = req  # the request of the caller's latest try: progress and logs go to it
        self.questions: asyncio.Queue[tuple[dict[str, Any], asyncio.Future[dict[str, Any]]]] = asyncio.Queue()
        self.answer: asyncio.Future[dict[str, Any]] | None = None
        self.call: asyncio.Task[dict[str, Any]] | None = None
        self.expiry: asyncio.TimerHandle | None = None


class Asking:
    """The calls of one proxy that wait for a 2026-07-28 caller's answers (this process's)."""

    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}

    async def request(self, backend: HttpBackend | StdioBackend, method: str, params: dict[str, Any],
                      req: Inbound | None) -> dict[str, Any]:
        """``method`` on ``backend`` for ``req``'s caller: a retry with answers resumes the call
        they answer; a 2026-07-28 caller's call to a 2025 backend runs here, so that its questions
        become ``input_required`` results."""
        if req is None:
            return await backend.request(method, params, req, relay_to(req))
        state = params.get("requestState")
        if isinstance(state, str) and state.startswith(STATE_PREFIX):
            return await self.resume(params, req)
        if req.era is Era.MODERN and method in _ASKING and await backend.era_of(req) == "legacy":
            return await self.start(lambda relay: backend.request(method, params, req, relay), req)
        return await backend.request(method, params, req, relay_to(req))

    async def start(self, send: Send, req: Inbound) -> dict[str, Any]:
        """Run ``send`` (the backend's call, given the relay to use); its result, or the first
        question as an ``input_required`` result."""
        p = _Pending(caller_key(req), req)

        async def relay(msg: dict[str, Any]) -> dict[str, Any] | None:
            if "id" not in msg:
                return await relay_to(p.req)(msg)
            fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            await p.questions.put(({"method": msg.get("method"), "params": msg.get("params") or {}}, fut))
            return await fut

        p.call = asyncio.ensure_future(send(relay))
        p.call.add_done_callback(_retrieved)
        return await self._next(p)

    async def resume(self, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        """The retry of a call asked about: its answer goes to the backend; the call's result, or
        its next question."""
        state = params.get("requestState")
        p = self._pending.pop(state, None) if isinstance(state, str) else None
        if p is None or p.caller != caller_key(req):
            if p is not None:
                self._pending[str(state)] = p
            raise McpError(JsonRpcErrorCode.InvalidParams, "This answer is for a question this server is not "
                           "waiting on: it expired, was answered already, or is held by another instance.",
                           {"reason": "input_state_unknown"})
        if p.expiry is not None:
            p.expiry.cancel()
        answers = params.get("inputResponses") or {}
        answer = answers.get("q") if isinstance(answers, dict) else None
        p.req = req
        assert p.answer is not None
        if isinstance(answer, dict):
            p.answer.set_result(answer)
        else:
            p.answer.set_exception(McpError(JsonRpcErrorCode.InvalidParams, "the caller sent no answer"))
        return await self._next(p)

    async def _next(self, p: _Pending) -> dict[str, Any]:
        assert p.call is not None
        asked = asyncio.ensure_future(p.questions.get())
        try:
            await asyncio.wait({p.call, asked}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the caller went away: so does the backend's call
            asked.cancel()
            p.call.cancel()
            raise
        if not asked.done():
            asked.cancel()
            return p.call.result()
        question, p.answer = asked.result()
        state = STATE_PREFIX + secrets.token_urlsafe(24)
        self._pending[state] = p
        p.expiry = asyncio.get_running_loop().call_later(ANSWER_WITHIN_S, self._expire, state)
        return {"resultType": "input_required", "inputRequests": {"q": question}, "requestState": state}

    def _expire(self, state: str) -> None:
        p = self._pending.pop(state, None)
        if p is not None and p.call is not None:
            p.call.cancel()  # the backend's call is told (notifications/cancelled)

    def close(self) -> None:
        """Cancel every call still waiting for an answer."""
        for state in list(self._pending):
            self._expire(state)


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # the caller that went away never reads it


async def answer_rounds(backend: HttpBackend | StdioBackend, method: str, params: dict[str, Any],
                        result: dict[str, Any], req: Inbound, max_rounds: int = 10) -> dict[str, Any]:
    """A 2026-07-28 backend's ``input_required`` ``result`` for a 2025 caller: each question asked
    of the caller over its session, the request sent again with the answers, until a result."""
    rounds = 0
    while result.get("resultType") == "input_required" and rounds < max_rounds:
        rounds += 1
        answers = {}
        for k, ask in (result.get("inputRequests") or {}).items():
            answers[k] = await req.outbound.request(ask.get("method"), ask.get("params"))
        again = {**params, "inputResponses": answers}
        if result.get("requestState") is not None:
            again["requestState"] = result["requestState"]
        result = await backend.request(method, again, req, relay_to(req))
    return result
