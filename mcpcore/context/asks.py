"""``await ctx.elicit(...)``, ``await ctx.sample(...)``, ``await ctx.list_roots()``: asking the
caller in the middle of a handler, in both eras, with one handler.

* **A 2025-era session** (HTTP or stdio): the request goes to the client at once and the
  coroutine resumes with its answer.
* **2026-07-28, and a task** (either era): there is no channel to the client while the handler
  runs, so the first unanswered ask ends the run through the ``input_required`` round of
  :meth:`~mcpcore.Context.request_input`. The client's retry (or ``tasks/update``) runs the
  handler again from the top, and each ask returns its answer: the n-th ask of a run gets the
  answer to the n-th question, keyed by order (``elicit#1``, ``sample#2``, ``roots#3``).
  Answers of earlier rounds travel in ``requestState`` (sealed when a key is configured).

Code before an ask runs again on every round of the second kind: docs/asking-the-caller.md
says how to guard side effects.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

from pydantic import BaseModel, ValidationError, create_model

from .. import _json
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.versions import Era
from .builders import input_required
from .inputs import InputRequest, InputRequired, InputRequiredSpec, check_capabilities, filter_responses

if TYPE_CHECKING:
    from .inbound import Inbound

__all__ = ["Asking", "Elicited", "Sampled", "pack_state", "unpack_state"]

T = TypeVar("T")

STATE_PREFIX = "mcpcore.asks."
_KEY = re.compile(r"^(elicit|sample|roots)#[1-9][0-9]*$")
# Transports whose 2025-era requests can carry a request to the client while the handler waits.
_NO_CHANNEL = frozenset({"task", "test"})


@dataclass(frozen=True, slots=True)
class Elicited(Generic[T]):
    """The user's answer to ``await ctx.elicit(...)``.

    ``action`` is ``"accept"``, ``"decline"`` or ``"cancel"``; ``data`` is the accepted answer
    (the model instance, the dict, or the single value asked for), ``None`` otherwise;
    ``content`` is the form's raw content.
    """

    action: Literal["accept", "decline", "cancel"]
    data: T | None = None
    content: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (``data`` holds the answer)."""
        return self.action == "accept"


@dataclass(frozen=True, slots=True)
class Sampled:
    """The client's model's answer to ``await ctx.sample(...)`` (a ``CreateMessageResult``)."""

    result: dict[str, Any]

    @property
    def text(self) -> str:
        """The text blocks of the answer, joined by a space."""
        content = self.result.get("content")
        blocks = content if isinstance(content, list) else [content]
        return " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")

    @property
    def content(self) -> Any:
        """The answer's content block (or blocks), as sent."""
        return self.result.get("content")

    @property
    def model(self) -> str | None:
        """The model the client used, as it reports it."""
        model = self.result.get("model")
        return model if isinstance(model, str) else None

    @property
    def stop_reason(self) -> str | None:
        """Why the model stopped (``endTurn``, ``maxTokens``, ...), when the client says."""
        reason = self.result.get("stopReason")
        return reason if isinstance(reason, str) else None


# -- the answers carried in requestState ---------------------------------------------------------

def pack_state(answers: Mapping[str, Any], user_state: str | None) -> str:
    """``requestState`` carrying the answers of earlier asks and the handler's own state."""
    body = _json.dumps({"a": dict(answers), "s": user_state})
    return STATE_PREFIX + base64.urlsafe_b64encode(body).decode().rstrip("=")


def unpack_state(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """``(answers, the handler's own state)`` of a ``requestState``; a state this module did not
    pack is all the handler's."""
    if raw is None or not raw.startswith(STATE_PREFIX):
        return {}, raw
    text = raw[len(STATE_PREFIX):]
    try:
        body = _json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except ValueError as exc:
        raise McpError(JsonRpcErrorCode.InvalidParams, "The requestState of the awaited questions is malformed.",
                       {"reason": "invalid_request_state"}) from exc
    answers, state = body.get("a") if isinstance(body, dict) else None, body.get("s") if isinstance(body, dict) else 0
    if not isinstance(answers, dict) or not (state is None or isinstance(state, str)):
        raise McpError(JsonRpcErrorCode.InvalidParams, "The requestState of the awaited questions is malformed.",
                       {"reason": "invalid_request_state"})
    return {k: v for k, v in answers.items() if _KEY.match(k)}, state


def known_answers(req: Inbound) -> dict[str, Any]:
    """The answers this request has to its handler's awaited asks (built once per request):
    those of earlier rounds (its ``requestState``) and this round's, limited to what the
    client's capabilities cover."""
    known = req.asked
    if known is None:
        known, _ = unpack_state(req.request_state)
        fresh, _ = filter_responses({k: v for k, v in (req.input_responses or {}).items() if _KEY.match(k)},
                                    req.client_capabilities)
        for key, value in fresh.items():
            known.setdefault(key, value)
        req.asked = known
    return known


# -- the Context methods ---------------------------------------------------------------------------

def _answer_kind(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return None
    if answer.get("action") in ("accept", "decline", "cancel"):
        return "elicit"
    if isinstance(answer.get("roots"), list):
        return "roots"
    if "role" in answer and "content" in answer:
        return "sample"
    return None


def _form(schema: Any) -> tuple[type[BaseModel] | None, Mapping[str, Any] | type[BaseModel], bool]:
    """``(model to validate with, schema to send, whether data is the single field "value")``."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema, schema, False
    if isinstance(schema, Mapping):
        return None, schema, False
    wrapper: type[BaseModel] = create_model("Answer", value=(schema, ...))
    return wrapper, wrapper, True


class Asking:
    """The awaitable asks of :class:`~mcpcore.Context` (a mixin: ``self._req`` is the request)."""

    __slots__ = ()
    _req: Inbound
    _asks: int

    def _next_key(self, kind: str) -> str:
        try:
            n = self._asks + 1
        except AttributeError:
            n = 1
        self._asks = n  # type: ignore[misc]  # the slot is declared by Context
        return f"{kind}#{n}"

    async def _ask(self, kind: str, wanted: InputRequest, fallback_hint: str | None) -> dict[str, Any]:
        req = self._req
        key = self._next_key(kind)
        known = known_answers(req)
        answer = known.get(key)
        if _answer_kind(answer) == kind:
            return cast(dict[str, Any], answer)
        spec = InputRequiredSpec({key: wanted}, None)
        modern = req.era is Era.MODERN
        check_capabilities(spec, req.client_capabilities, modern=modern, fallback_hint=fallback_hint,
                           stateless_mode=req.services.session_mode == "stateless")
        if modern or req.transport in _NO_CHANNEL:
            _, user_state = unpack_state(req.request_state)
            raise InputRequired(InputRequiredSpec({key: wanted}, pack_state(known, user_state)), fallback_hint)
        try:
            result = await req.outbound.request(wanted.method, dict(wanted.params))
        except McpError as exc:
            code = exc.code if exc.code != JsonRpcErrorCode.MethodNotFound else JsonRpcErrorCode.InvalidRequest
            raise McpError(code, f"The client could not complete {wanted.method}: {exc.message}",
                           {"reason": "client_request_failed", "method": wanted.method}) from exc
        known[key] = result  # a later run of this handler in the same request (a request_input round) reuses it
        return result

    @overload
    async def elicit(self, message: str, schema: type[BaseModel], *,
                     fallback_hint: str | None = None) -> Elicited[Any]: ...
    @overload
    async def elicit(self, message: str, schema: Mapping[str, Any], *,
                     fallback_hint: str | None = None) -> Elicited[dict[str, Any]]: ...
    @overload
    async def elicit(self, message: str, schema: type[T], *, fallback_hint: str | None = None) -> Elicited[T]: ...
    async def elicit(self, message: str, schema: Any, *, fallback_hint: str | None = None) -> Elicited[Any]:
        """Ask the user to fill a form and wait for the answer (both eras; see the module doc).

        Args:
            message: what the client shows the user.
            schema: a pydantic model (``data`` is an instance), a flat ``{"type": "object",
                "properties": ...}`` dict (``data`` is the dict), or one type such as ``str``,
                ``int``, ``bool`` or a ``Literal`` (asked as the field ``value``; ``data`` is it).
            fallback_hint: a sentence added to the refusal's recovery hint when the client
                cannot answer (say how the caller can supply the answer another way).

        Raises:
            McpError: the client cannot answer (its capabilities), could not complete the
                request, or accepted with content that does not match ``schema``.
            TypeError: ``schema`` has a shape an elicitation form cannot express.
        """
        model, sent, single = _form(schema)
        answer = await self._ask("elicit", input_required.elicit(message, sent), fallback_hint)
        action = answer.get("action")
        if action not in ("accept", "decline", "cancel"):
            raise McpError(JsonRpcErrorCode.InvalidParams, f"The client answered the form {message!r} with no "
                           f"valid action ({action!r}).", {"reason": "invalid_elicitation_answer"})
        content = answer.get("content") if isinstance(answer.get("content"), dict) else None
        if action != "accept":
            return Elicited(action, None, content)
        if model is None:
            return Elicited("accept", dict(content or {}), content)
        try:
            data: Any = model.model_validate(content or {})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "content"
            raise McpError(JsonRpcErrorCode.InvalidParams, f"The answer to the form {message!r} does not match it: "
                           f"{where}: {first.get('msg')}", {"reason": "invalid_elicitation_answer"}) from exc
        return Elicited("accept", data.value if single else data, content)

    async def sample(self, messages: Sequence[Any] | str, *, max_tokens: int = 1000, system_prompt: str | None = None,
                     temperature: float | None = None, stop_sequences: Sequence[str] | None = None,
                     model_preferences: Mapping[str, Any] | None = None, include_context: str | None = None,
                     metadata: Mapping[str, Any] | None = None, fallback_hint: str | None = None) -> Sampled:
        """Ask the client's model (``sampling/createMessage``) and wait for its answer (both
        eras; see the module doc). ``messages`` is a string or ``{"role", "content"}`` dicts.

        Raises:
            McpError: the client cannot answer (no ``sampling`` capability) or refused.
        """
        wanted = input_required.create_message(
            messages, max_tokens, system_prompt=system_prompt, temperature=temperature, stop_sequences=stop_sequences,
            model_preferences=model_preferences, include_context=include_context, metadata=metadata)
        return Sampled(await self._ask("sample", wanted, fallback_hint))

    async def list_roots(self, *, fallback_hint: str | None = None) -> list[dict[str, Any]]:
        """The client's filesystem roots (``roots/list``; each ``{"uri", "name"?}``), in both eras.

        Raises:
            McpError: the client cannot answer (no ``roots`` capability) or refused.
        """
        answer = await self._ask("roots", input_required.list_roots(), fallback_hint)
        return [r for r in answer.get("roots", []) if isinstance(r, dict)]
