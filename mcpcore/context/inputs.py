"""Asking the caller: the ``InputRequired`` signal, capability checks, and ``ctx.inputs``.

A handler that needs something the caller did not supply calls ``ctx.request_input(...)``.
On 2026-07-28 that becomes an ``input_required`` result the client answers by retrying; on a
2025-era session the framework sends real requests to the client and re-enters the handler.
Either way the handler reads the answers on ``ctx.inputs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import JsonRpcErrorCode, McpError

__all__ = [
    "ContextInputs",
    "ElicitView",
    "InputRequest",
    "InputRequired",
    "InputRequiredSpec",
    "MissingView",
    "RootsView",
    "SamplingView",
    "check_capabilities",
    "filter_responses",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class InputRequest:
    """One embedded request: ``elicitation/create``, ``sampling/createMessage`` or ``roots/list``."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}


@dataclass(frozen=True, slots=True)
class InputRequiredSpec:
    """What a handler asks for: named input requests and/or opaque state for the next round."""

    input_requests: dict[str, InputRequest] = field(default_factory=dict)
    request_state: str | None = None

    def __post_init__(self) -> None:
        if not self.input_requests and self.request_state is None:
            raise TypeError("request_input needs input_requests, request_state, or both")
        if self.request_state is not None and not isinstance(self.request_state, str):
            raise TypeError("request_state must be a string (keep it an opaque handle)")
        for key, req in self.input_requests.items():
            if not isinstance(key, str) or not key:
                raise TypeError("input request keys must be non-empty strings")
            if not isinstance(req, InputRequest):
                raise TypeError(f"input request {key!r} must be built with input_required.*")


class InputRequired(BaseException):
    """Raised by ``ctx.request_input``; the framework turns it into the protocol's answer.

    A signal, not an error: like ``asyncio.CancelledError`` it derives from ``BaseException``,
    so a handler's ``except Exception`` around ``ctx.request_input`` lets the question through.
    """

    def __init__(self, spec: InputRequiredSpec, fallback_hint: str | None = None) -> None:
        super().__init__("input required")
        self.spec = spec
        self.fallback_hint = fallback_hint


# -- capability checks --------------------------------------------------------------------------

def _has(caps: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = caps
    for p in path:
        if not isinstance(node, Mapping) or p not in node or node[p] is None:
            return False
        node = node[p]
    return True


def _form_ok(caps: Mapping[str, Any]) -> bool:
    el = caps.get("elicitation")
    return isinstance(el, Mapping) and (not el or "form" in el)


def required_for(req: InputRequest) -> tuple[str, dict[str, Any]]:
    """``(capability name for messages, requiredCapabilities object)`` for one request."""
    if req.method == "elicitation/create":
        if req.params.get("mode") == "url":
            return "elicitation.url", {"elicitation": {"url": {}}}
        return "elicitation.form", {"elicitation": {"form": {}}}
    if req.method == "sampling/createMessage":
        if "tools" in req.params or "toolChoice" in req.params:
            return "sampling.tools", {"sampling": {"tools": {}}}
        return "sampling", {"sampling": {}}
    return "roots", {"roots": {}}


def _satisfied(req: InputRequest, caps: Mapping[str, Any]) -> bool:
    name, _ = required_for(req)
    if name == "elicitation.form":
        return _form_ok(caps)
    return _has(caps, tuple(name.split(".")))


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def check_capabilities(spec: InputRequiredSpec, caps: Mapping[str, Any] | None, *, modern: bool,
                       fallback_hint: str | None, stateless_mode: bool) -> None:
    """Refuse a request for input the client cannot answer.

    2026-07-28: ``-32021`` with ``data.requiredCapabilities`` and the recovery hint (in ``data`` and
    the message). 2025 era: ``-32600`` with
    ``data.reason = "client_capability_missing"`` and a recovery hint that ends at reconnecting
    (plus ``fallback_hint``). A spec with only ``request_state`` asks for nothing and passes.
    """
    if not spec.input_requests:
        return
    view = caps if caps is not None else {}
    missing = [r for r in spec.input_requests.values() if not _satisfied(r, view)]
    if not missing and caps is not None:
        return
    if modern:
        required: dict[str, Any] = {}
        for r in missing:
            required = _merge(required, required_for(r)[1])
        names = ", ".join(sorted({required_for(r)[0] for r in missing}))
        # A JSON-RPC error reaches the model only as its message, so the hint is in there too.
        hint = f"Declare `{names}` in the request's client capabilities, from a client that can answer, and call again."
        if fallback_hint:
            hint = f"{hint} {fallback_hint}"
        raise McpError(JsonRpcErrorCode.MissingRequiredClientCapability,
                       f"This request needs the client capability {names}, which the request did not declare. "
                       f"Recovery: {hint}",
                       {"requiredCapabilities": required, "reason": "client_capability_missing",
                        "recovery": {"hint": hint}})
    if caps is None:
        message = ("This 2025-era request was served without a session, so the server cannot ask the client "
                   "for input." + (" The server runs with MCP_SESSION_MODE=stateless." if stateless_mode else ""))
        hint = ("Reconnect to a server that keeps stateful sessions (MCP_SESSION_MODE=stateful or auto) and "
                "initialize a session first.")
        names = ", ".join(sorted({required_for(r)[0] for r in spec.input_requests.values()}))
    else:
        names = ", ".join(sorted({required_for(r)[0] for r in missing}))
        message = f"The client did not declare the {names} capability this request needs."
        hint = f"Reconnect with a client that declares the `{names}` capability."
    if fallback_hint:
        hint = f"{hint} {fallback_hint}"
    raise McpError(JsonRpcErrorCode.InvalidRequest, message,
                   {"reason": "client_capability_missing", "capability": names, "recovery": {"hint": hint}})


# -- ctx.inputs ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MissingView:
    kind: Literal["missing"] = "missing"


@dataclass(frozen=True, slots=True)
class ElicitView:
    action: str
    content: dict[str, Any] | None = None
    kind: Literal["elicit"] = "elicit"


@dataclass(frozen=True, slots=True)
class SamplingView:
    result: dict[str, Any]
    kind: Literal["sampling"] = "sampling"


@dataclass(frozen=True, slots=True)
class RootsView:
    roots: list[dict[str, Any]]
    kind: Literal["roots"] = "roots"


InputView = MissingView | ElicitView | SamplingView | RootsView


def _kind(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return None
    if entry.get("action") in ("accept", "decline", "cancel"):
        return "elicit"
    if isinstance(entry.get("roots"), list):
        return "roots"
    if "role" in entry and "content" in entry:
        return "sampling"
    return None


def _uses_tools(result: dict[str, Any]) -> bool:
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    return any(isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in blocks)


def filter_responses(raw: Mapping[str, Any] | None, caps: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """Keep only the responses the client's declared capabilities cover (kind and mode).

    Returns ``(kept, dropped)`` where ``dropped`` lists keys whose value was a wrapped response
    (``{"result": {...}}``) instead of a bare one. With no capability view nothing is kept.
    """
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    if not raw or caps is None:
        return kept, dropped
    for key, entry in raw.items():
        kind = _kind(entry)
        if kind is None:
            if isinstance(entry, dict) and ("result" in entry or "jsonrpc" in entry):
                dropped.append(key)
            continue
        if kind == "elicit":
            ok = _form_ok(caps) if entry.get("content") is not None else isinstance(caps.get("elicitation"), Mapping)
        elif kind == "sampling":
            ok = _has(caps, ("sampling", "tools")) if _uses_tools(entry) else _has(caps, ("sampling",))
        else:
            ok = _has(caps, ("roots",))
        if ok:
            kept[key] = entry
    return kept, dropped


class ContextInputs:
    """The answers this round carries, limited to what the client's capabilities cover."""

    __slots__ = ("_state", "dropped", "responses")

    def __init__(self, raw: Mapping[str, Any] | None, caps: Mapping[str, Any] | None, state: str | None) -> None:
        self.responses, self.dropped = filter_responses(raw, caps)
        self._state = state

    @overload
    def accepted(self, key: str) -> dict[str, Any] | None: ...
    @overload
    def accepted(self, key: str, model: type[T]) -> T | None: ...
    def accepted(self, key: str, model: Any = None) -> Any:
        """The accepted form content for ``key`` (validated into ``model`` when given), else
        ``None``: missing, declined, cancelled, another kind, or invalid all read as ``None``."""
        entry = self.responses.get(key)
        if not isinstance(entry, dict) or _kind(entry) != "elicit" or entry.get("action") != "accept" \
                or not isinstance(entry.get("content"), dict):
            return None
        content = entry["content"]
        if model is None:
            return dict(content)
        try:
            if isinstance(model, type) and issubclass(model, BaseModel):
                return model.model_validate(content)
            return TypeAdapter(model).validate_python(content)
        except ValidationError:
            return None

    def view(self, key: str) -> InputView:
        """A discriminated view of one answer (``.kind``: missing, elicit, sampling, roots)."""
        entry = self.responses.get(key)
        if not isinstance(entry, dict):
            return MissingView()
        kind = _kind(entry)
        if kind == "elicit":
            content = entry.get("content")
            return ElicitView(entry["action"], content if isinstance(content, dict) else None)
        if kind == "sampling":
            return SamplingView(dict(entry))
        if kind == "roots":
            return RootsView([r for r in entry["roots"] if isinstance(r, dict)])
        return MissingView()

    def state(self) -> str | None:
        """The ``request_state`` this round carried (the handler's own string), or ``None``."""
        return self._state
