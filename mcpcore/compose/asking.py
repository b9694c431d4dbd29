"""A 2025 backend's questions asked of a 2026-07-28 caller, across the caller's retries.

A 2025 backend asks (elicitation, sampling, roots) on the open stream of the call and waits
there for the answer; a 2026-07-28 caller answers by sending the call again with
``inputResponses``. So the proxy keeps the backend's call running in a task, answers the caller
``input_required`` with the question and a ``requestState`` naming that task, and hands the
answers of the retry to the waiting backend. The pending call lives in this process, and the
``requestState`` names it (:attr:`Asking.holder`): with Redis, a retry reaching another instance
is handed over (pushed to the holder's inbox list; the holder resumes the call and pushes the
result or next question to the retrying instance's reply key). Without Redis, or when the holder
is gone, it is refused with ``-32602`` and ``reason: input_state_unknown``, as is a retry after
:data:`ANSWER_WITHIN_S` (the backend's call is then cancelled) or from another caller.

A 2026-07-28 backend's questions to a 2025 caller are :func:`answer_rounds`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from .. import _json
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
HAND_OVER_WAIT_S = 120.0
"""How long a retry handed over to the instance holding the call waits for its answer."""
_ALIVE_MS = 5000
STATE_PREFIX = "mcpcore-proxy-ask:"

log = logging.getLogger("mcpcore.compose")

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
        self.holder = secrets.token_hex(6)
        """This instance's mark in the ``requestState`` of the calls it holds."""
        self.redis: Any = None
        self.prefix = ""
        self._inbox: asyncio.Task[None] | None = None
        self._handling: set[asyncio.Task[None]] = set()

    def share(self, redis: Any, prefix: str) -> None:
        """Take retries other instances hand over through Redis (``prefix``: this proxy's keys), and
        hand over those that reach this instance for a call another holds."""
        self.redis, self.prefix = redis, prefix
        self._inbox = asyncio.get_running_loop().create_task(self._serve_inbox())

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
        state = str(params.get("requestState"))
        holder = state[len(STATE_PREFIX):].partition(".")[0]
        if state not in self._pending and self.redis is not None and holder != self.holder:
            return await self._hand_over(state, holder, params.get("inputResponses"), req)
        return await self._resume(state, caller_key(req), params.get("inputResponses"), req)

    async def _resume(self, state: str, caller: str, answers: Any, req: Inbound | None) -> dict[str, Any]:
        p = self._pending.pop(state, None)
        if p is None or p.caller != caller:
            if p is not None:
                self._pending[state] = p
            raise _unknown()
        if p.expiry is not None:
            p.expiry.cancel()
        answer = answers.get("q") if isinstance(answers, dict) else None
        p.req = req or p.req  # a retry handed over from another instance: progress and logs stay unsent
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
        state = f"{STATE_PREFIX}{self.holder}.{secrets.token_urlsafe(24)}"
        self._pending[state] = p
        p.expiry = asyncio.get_running_loop().call_later(ANSWER_WITHIN_S, self._expire, state)
        return {"resultType": "input_required", "inputRequests": {"q": question}, "requestState": state}

    def _expire(self, state: str) -> None:
        p = self._pending.pop(state, None)
        if p is not None and p.call is not None:
            p.call.cancel()  # the backend's call is told (notifications/cancelled)

    def close(self) -> None:
        """Cancel every call still waiting for an answer, and stop taking handed-over retries."""
        for task in (self._inbox, *self._handling):
            if task is not None:
                task.cancel()
        self._inbox = None
        for state in list(self._pending):
            self._expire(state)

    # -- retries reaching another instance (Redis) ------------------------------------------------

    async def _hand_over(self, state: str, holder: str, answers: Any, req: Inbound) -> dict[str, Any]:
        """Send the retry's answers to the instance holding the call; its result, or next question."""
        reply = f"{self.prefix}reply:{secrets.token_urlsafe(12)}"
        inbox = f"{self.prefix}inbox:{holder}"
        alive = f"{self.prefix}alive:{holder}"
        if not await self.redis.exists(alive):  # no such instance (any more)
            raise _unknown()
        await self.redis.rpush(inbox, _json.dumps({"state": state, "caller": caller_key(req), "answers": answers,
                                                   "reply": reply}))
        await self.redis.pexpire(inbox, int(ANSWER_WITHIN_S * 1000))
        got = None
        for _ in range(int(HAND_OVER_WAIT_S // 2)):
            got = await self.redis.blpop([reply], timeout=2)
            if got is not None or not await self.redis.exists(alive):
                break
        if got is None:  # the holder went away, or did not answer in time
            raise _unknown()
        answer = _json.loads(got[1])
        err = answer.get("error")
        if isinstance(err, dict):
            raise McpError(int(err.get("code", JsonRpcErrorCode.InternalError)), str(err.get("message", "")),
                           err.get("data"))
        result: dict[str, Any] = answer.get("result") or {}
        return result

    async def _serve_inbox(self) -> None:
        inbox = f"{self.prefix}inbox:{self.holder}"
        alive = f"{self.prefix}alive:{self.holder}"
        while True:
            try:
                await self.redis.set(alive, b"1", px=_ALIVE_MS)  # other instances hand over only to a live one
                got = await self.redis.blpop([inbox], timeout=1)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis away: try again shortly
                log.info("handed-over retries could not be read: %s", exc)
                await asyncio.sleep(1.0)
                continue
            if got is not None:
                task = asyncio.get_running_loop().create_task(self._answer_for(_json.loads(got[1])))
                self._handling.add(task)
                task.add_done_callback(self._handling.discard)

    async def _answer_for(self, asked: dict[str, Any]) -> None:
        """Resume the call a handed-over retry answers; send its result (or next question) back."""
        try:
            out: dict[str, Any] = {"result": await self._resume(str(asked.get("state")), str(asked.get("caller")),
                                                                asked.get("answers"), None)}
        except McpError as exc:
            out = {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
        except Exception as exc:
            out = {"error": {"code": JsonRpcErrorCode.InternalError, "message": str(exc), "data": None}}
        reply = str(asked.get("reply"))
        await self.redis.rpush(reply, _json.dumps(out))
        await self.redis.pexpire(reply, 60_000)


def _unknown() -> McpError:
    return McpError(JsonRpcErrorCode.InvalidParams, "This answer is for a question this server is not waiting on: "
                    "it expired, was answered already, or its instance is gone.", {"reason": "input_state_unknown"})


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
