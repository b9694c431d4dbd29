"""``Context``: the one object every handler receives, and its ``RequestContext`` base."""

from __future__ import annotations

import asyncio
import copy
import functools
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import ErrorContract, Fail, contract_failure
from ..protocol.extensions import client_extension, client_extensions
from ..protocol.versions import Era
from .asks import Asking, pack_state, unpack_state
from .enrich import ContentCollect, Enrich
from .inbound import AuthInfo, Inbound, new_request_token
from .inputs import ContextInputs, InputRequest, InputRequired, InputRequiredSpec, check_capabilities
from .log import ContextLogger
from .state import ContextState
from .values import HttpInfo, Values

if TYPE_CHECKING:
    from .signal import CancelSignal

__all__ = ["Context", "RequestContext", "create_request_context", "with_extra"]

_CANONICAL = ("requestId", "traceId", "spanId", "tenantId", "sessionId", "operation")


class RequestContext:
    """Request identity and correlation. Closed: these fields and nothing else; ad-hoc
    correlation data goes in ``extra`` (see :func:`with_extra`)."""

    __slots__ = ("_started", "auth", "extra", "operation", "request_id", "session_id", "span_id", "tenant_id",
                 "trace_id")

    def __init__(
        self,
        *,
        request_id: str | None = None,
        tenant_id: str | None = None,
        session_id: str | None = None,
        trace_id: str | None = None,
        span_id: str | None = None,
        auth: AuthInfo | None = None,
        operation: str | None = None,
        extra: Mapping[str, Any] | None = None,
        started: float | None = None,
    ) -> None:
        self.request_id: str = request_id or new_request_token()
        self.tenant_id = tenant_id
        self.session_id = session_id
        self.trace_id = trace_id
        self.span_id = span_id
        self.auth = auth
        self.operation = operation
        self.extra: Mapping[str, Any] | None = dict(extra) if extra else None
        self._started = started if started is not None else time.time()

    @property
    def timestamp(self) -> str:
        """ISO 8601 start time of the request."""
        t = self._started
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"

    def _correlation(self) -> dict[str, Any]:
        out: dict[str, Any] = {"requestId": self.request_id}
        if self.trace_id:
            out["traceId"] = self.trace_id
        if self.span_id:
            out["spanId"] = self.span_id
        if self.tenant_id:
            out["tenantId"] = self.tenant_id
        if self.session_id:
            out["sessionId"] = self.session_id
        if self.operation:
            out["operation"] = self.operation
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(request_id={self.request_id!r}, tenant_id={self.tenant_id!r})"


class Context(Asking, RequestContext):
    """Everything a handler gets: identity, ``log``, ``state``, ``signal``, ``enrich``,
    ``content``, notifications, progress, the error contract, and asking the caller
    (``await ctx.elicit(...)``, ``ctx.sample``, ``ctx.list_roots``; ``ctx.request_input``).

    Declare it as a parameter annotated ``Context`` (any name); it never appears in a schema.
    """

    __slots__ = ("_asks", "_content", "_enrich", "_errors", "_inputs", "_log", "_loop", "_req", "_state", "uri")

    def __init__(
        self,
        req: Inbound,
        *,
        operation: str | None = None,
        errors: Sequence[ErrorContract] = (),
        uri: str | None = None,
    ) -> None:
        self.request_id = req.request_id
        self.tenant_id = req.tenant_id
        self.session_id = req.session_id
        self.trace_id = req.trace_id
        self.span_id = req.span_id
        self.auth = req.auth
        self.operation = operation
        self.extra = None
        self._started = req.started
        self._req = req
        self._errors = errors
        self.uri = uri
        self._log: ContextLogger | None = None
        self._state: ContextState | None = None
        self._enrich: Enrich | None = None
        self._content: ContentCollect | None = None
        self._inputs: ContextInputs | None = None
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def _post(self, message: dict[str, Any]) -> None:
        """Queue a message on the request's channel, from the loop or from a worker thread."""
        if self._loop is not None and not _on_loop():
            self._loop.call_soon_threadsafe(self._req.outbound.post, message)
            return
        self._req.outbound.post(message)

    def _notify(self, event: dict[str, Any]) -> None:
        if self._loop is not None and not _on_loop():
            self._loop.call_soon_threadsafe(self._req.services.notify, event, self._req)
            return
        self._req.services.notify(event, self._req)

    @property
    def log(self) -> ContextLogger:
        """The request-scoped, dual-sink structured logger."""
        if self._log is None:
            self._log = ContextLogger(self)
        return self._log

    @property
    def state(self) -> ContextState:
        """Tenant-scoped key-value storage."""
        if self._state is None:
            self._state = ContextState(self._req.services.state, self.tenant_id)
        return self._state

    @property
    def enrich(self) -> Enrich:
        """Success-path enrichment (notices, totals, the parsed query)."""
        if self._enrich is None:
            self._enrich = Enrich()
        return self._enrich

    @property
    def content(self) -> ContentCollect:
        """Non-text content blocks prepended to ``content[]``."""
        if self._content is None:
            self._content = ContentCollect()
        return self._content

    @property
    def values(self) -> Values:
        """Typed values the middleware layers and dependencies before this code set for the
        request: ``ctx.values[User]`` (see :class:`~mcpcore.context.values.Values`)."""
        req = self._req
        data = req.values
        if data is None:
            data = req.values = {}
        return Values(data)

    @property
    def http(self) -> HttpInfo | None:
        """The HTTP request (headers, client address, the host app's ``request.state``);
        ``None`` over stdio."""
        scope = self._req.asgi_scope
        return HttpInfo(scope) if scope is not None else None

    @property
    def app_state(self) -> Any:
        """The app's :attr:`~mcpcore.McpApp.state`: what ``setup`` opened for the app's lifetime
        (a connection pool, a client)."""
        return self._req.services.app_state

    @property
    def signal(self) -> CancelSignal:
        """Fires when the client cancels this request or its stream closes."""
        return self._req.signal

    @property
    def client_capabilities(self) -> dict[str, Any] | None:
        """What the client declared (``initialize`` on 2025 sessions, the request's envelope on
        2026-07-28); ``{}`` when it declared none, ``None`` when no view exists."""
        return self._req.client_capabilities

    @property
    def client_extensions(self) -> dict[str, dict[str, Any]]:
        """The extensions the caller declared (``capabilities.extensions``): id -> settings."""
        return client_extensions(self._req.client_capabilities)

    def client_extension(self, ext_id: str) -> dict[str, Any] | None:
        """The settings the caller declared for extension ``ext_id``, or ``None`` when it did
        not declare it (so the handler falls back to core behaviour)::

            if ctx.client_extension("io.modelcontextprotocol/ui") is None:
                return "plain text for a client without Apps"
        """
        return client_extension(self._req.client_capabilities, ext_id)

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (``None`` for an ordinary call)."""
        task = self._req.task
        return task.task_id if task is not None else None

    async def start_task(self, message: str | None = None) -> None:
        """Go on as a task from here: the client receives the task (``resultType: "task"``) now
        and collects the result later. For a tool declared ``TaskSupport(..., start="handler")``
        after the rounds of ``ctx.request_input`` it needed first; a call that already is a
        task, or cannot become one (the client does not take tasks), just continues.
        ``message`` becomes the task's ``statusMessage``."""
        task = self._req.task
        if task is not None:
            await task.start(message)

    @property
    def protocol_version(self) -> str:
        """The protocol revision this request is served under."""
        return self._req.protocol_version

    @property
    def inputs(self) -> ContextInputs:
        """The answers this round carries (only those the client's capabilities cover)."""
        if self._inputs is None:
            s = self._req
            state = s.request_state
            self._inputs = ContextInputs(s.input_responses, s.client_capabilities,
                                         unpack_state(state)[1] if state is not None else None)
        return self._inputs

    def request_input(
        self,
        spec: InputRequiredSpec | Mapping[str, InputRequest] | None = None,
        /,
        *,
        request_state: str | None = None,
        fallback_hint: str | None = None,
    ) -> NoReturn:
        """Ask the caller for more input; the handler is re-entered with the answers on
        ``ctx.inputs``. Write it as ``return ctx.request_input(...)``: it always raises.

        Args:
            spec: ``input_required(...)``, or a mapping of keys to ``input_required.elicit(...)``,
                ``.elicit_url(...)``, ``.create_message(...)``, ``.list_roots()``.
            request_state: an opaque string handed back on the next round (``ctx.inputs.state()``).
            fallback_hint: a sentence appended to a 2025-era capability refusal's recovery hint
                (say how the caller can supply the answer another way).

        Raises:
            McpError: the client cannot answer (2026-07-28: ``-32021``; 2025: the
                ``client_capability_missing`` refusal), checked on every round.
            InputRequired: otherwise (the framework turns it into the protocol's answer).
        """
        if spec is None:
            spec = InputRequiredSpec({}, request_state)
        elif not isinstance(spec, InputRequiredSpec):
            spec = InputRequiredSpec(dict(spec), request_state)
        elif request_state is not None:
            spec = InputRequiredSpec(spec.input_requests, request_state)
        s = self._req
        if s.asked:  # the answers of awaited asks travel on with the handler's own state
            spec = InputRequiredSpec(spec.input_requests, pack_state(s.asked, spec.request_state))
        check_capabilities(spec, s.client_capabilities, modern=s.era is Era.MODERN, fallback_hint=fallback_hint,
                           stateless_mode=s.services.session_mode == "stateless")
        raise InputRequired(spec, fallback_hint)

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` when the request carried a ``progressToken``."""
        token = self._req.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        out = self._req.outbound
        out.post({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
        await out.drain()

    def notify_tool_list_changed(self, names: Sequence[str] | None = None) -> None:
        """Tell clients to re-list tools (fire-and-forget). ``names``: the tools that changed;
        then only clients whose view of them changed are told (see ``visible_to=``)."""
        self._notify(_change("tools", names))

    def notify_prompt_list_changed(self, names: Sequence[str] | None = None) -> None:
        """Tell clients to re-list prompts (fire-and-forget); ``names`` as for tools."""
        self._notify(_change("prompts", names))

    def notify_resource_list_changed(self, uris: Sequence[str] | None = None) -> None:
        """Tell clients to re-list resources (fire-and-forget); ``uris``: the resources or
        templates that changed, as ``names`` for tools."""
        self._notify(_change("resources", uris))

    def notify_resource_updated(self, uri: str) -> None:
        """Tell clients subscribed to ``uri`` that it changed (fire-and-forget)."""
        self._notify({"kind": "resource", "uri": uri})

    @property
    def fail(self) -> Fail:
        """Build the :class:`McpError` of a declared failure: ``raise ctx.fail("no_match")``, with
        ``(reason, message=None, data=None, *, cause=None)``.

        The code comes from the contract; ``data.reason`` is always the contract's reason. An
        undeclared reason yields an ``InternalError`` naming the declared ones. Present only
        when the definition declares ``errors=[...]``: otherwise reading it raises ``AttributeError``.
        """
        if not self._errors:
            raise AttributeError(f"ctx.fail is absent: {self.operation or 'this handler'} declares no errors=[...]; "
                                 "declare ErrorContract entries for the reasons it fails with, or raise McpError "
                                 "(mcpcore.errors.not_found(...), ...) directly")
        return functools.partial(contract_failure, self._errors)

    def recovery_for(self, reason: str) -> dict[str, Any]:
        """``{"recovery": {"hint": ...}}`` for a declared reason, ``{}`` otherwise."""
        for c in self._errors:
            if c.reason == reason:
                return {"recovery": {"hint": c.recovery}}
        return {}


def _change(kind: str, names: Sequence[str] | None) -> dict[str, Any]:
    if names is None:
        return {"kind": kind}
    if isinstance(names, str):
        raise TypeError("names is a list of names, not one string")
    return {"kind": kind, "names": list(names)}


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def with_extra(ctx: RequestContext, extra: Mapping[str, Any] | None = None, /, **fields: Any) -> Any:
    """A copy of ``ctx`` whose ``extra`` is the parent's merged with the new fields."""
    out = copy.copy(ctx)
    merged = dict(ctx.extra or {})
    if extra:
        merged.update(extra)
    merged.update(fields)
    out.extra = merged
    if isinstance(out, Context):
        out._log = None
    return out


def create_request_context(
    *,
    parent_context: RequestContext | None = None,
    operation: str | None = None,
    additional_context: Mapping[str, Any] | None = None,
    tenant_id: str | None = None,
) -> RequestContext:
    """A derived context for a sub-operation (or a fresh one): identity from the parent,
    ``operation`` replaced, ``additional_context`` merged into ``extra``."""
    if parent_context is None:
        return RequestContext(operation=operation, extra=additional_context, tenant_id=tenant_id)
    extra = dict(parent_context.extra or {})
    extra.update(additional_context or {})
    return RequestContext(
        request_id=parent_context.request_id,
        tenant_id=tenant_id if tenant_id is not None else parent_context.tenant_id,
        session_id=parent_context.session_id,
        trace_id=parent_context.trace_id,
        span_id=parent_context.span_id,
        auth=parent_context.auth,
        operation=operation or parent_context.operation,
        extra=extra,
        started=parent_context._started,
    )
