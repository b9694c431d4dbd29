"""The raw parts of one request (its Inbound), filled by the transport and read by ``Context``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol.versions import Era
from .outbound import DiscardOutbound, Outbound
from .signal import CancelSignal

if TYPE_CHECKING:
    from ..asgi_types import Scope
    from ..sessions.base import SessionRecord
    from ..storage.service import StateService

__all__ = ["AuthInfo", "ContextServices", "Inbound", "TaskHandle", "new_request_token"]

_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def new_request_token() -> str:
    """A generated request id of the form ``XXXXX-XXXXX``."""
    b = os.urandom(10)
    chars = [_ALPHABET[x & 31] for x in b]
    return "".join(chars[:5]) + "-" + "".join(chars[5:])


@dataclass(frozen=True, slots=True)
class AuthInfo:
    """Who is calling: the verified token's claims, as ``ctx.auth``."""

    client_id: str
    scopes: tuple[str, ...] = ()
    subject: str | None = None
    tenant_id: str | None = None
    expires_at: int | None = None
    token: str | None = field(default=None, repr=False)
    claims: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def sub(self) -> str | None:
        return self.subject


class TaskHandle(Protocol):
    """The task a call runs as, or may start (``ctx.task_id``, ``ctx.start_task``)."""

    @property
    def task_id(self) -> str | None:
        """The task's id once it exists."""

    async def start(self, message: str | None = None) -> None:
        """Make the call a task now, if it is not one yet and may become one."""


def _no_notify(event: dict[str, Any], req: Inbound) -> None:
    return None


@dataclass(slots=True, eq=False)
class ContextServices:
    """App-wide services a context reaches: state, the log floor, the notification router."""

    state: StateService | None = None
    log_floor: int = 20
    notify: Callable[[dict[str, Any], Inbound], None] = _no_notify
    session_mode: str = "auto"
    auth_mode: str = "none"
    scope_checks_disabled: bool = False
    app_state: Any = None
    """The app's :attr:`~mcpcore.McpApp.state` (``ctx.app_state``)."""
    delegation: Any = None
    """The app's delegated tokens (``McpApp(delegation=...)``; :mod:`mcpcore.auth.delegation`)."""


_DEFAULT_SERVICES = ContextServices()
_new = object.__new__
_time = time.time
_NULL_OUTBOUND: Outbound = DiscardOutbound()


class Inbound:
    """Everything about one request that a handler's context needs: a closed record (slots,
    every field typed below); the transport fills it, a task copies it with :meth:`for_task`.

    Pass the fields after ``tenant_id`` by keyword. (They are not keyword-only because a
    keyword-only parameter's default costs a dictionary lookup on every call, and an Inbound
    is built for every request.)
    """

    __slots__ = (
        "_request_id",
        "_signal",
        "asgi_scope",
        "asked",
        "auth",
        "check_sizes",
        "client_capabilities",
        "client_info",
        "client_log_level",
        "era",
        "input_responses",
        "jsonrpc_id",
        "meta",
        "method",
        "outbound",
        "progress_token",
        "protocol_version",
        "request_state",
        "services",
        "session",
        "session_id",
        "span_id",
        "started",
        "task",
        "tenant_id",
        "trace_headers",
        "trace_id",
        "transport",
        "values",
    )

    method: str
    jsonrpc_id: str | int | None
    era: Era
    protocol_version: str
    services: ContextServices
    outbound: Outbound
    session: SessionRecord | None
    session_id: str | None
    client_capabilities: dict[str, Any] | None
    client_info: dict[str, Any] | None
    client_log_level: int | None
    progress_token: str | int | None
    auth: AuthInfo | None
    tenant_id: str | None
    _signal: CancelSignal | None
    meta: dict[str, Any] | None
    input_responses: dict[str, Any] | None
    request_state: str | None
    trace_id: str | None
    span_id: str | None
    transport: str
    trace_headers: dict[str, str] | None
    check_sizes: bool
    """The transport could not rule out strings past :mod:`mcpcore.protocol.limits`' bounds."""
    values: dict[object, Any] | None
    """``ctx.values``, created on first use."""
    asgi_scope: Scope | None
    """The HTTP request's ASGI scope (``ctx.http``)."""
    started: float
    task: TaskHandle | None
    """Set for a call that runs as (or may start) a task."""
    asked: dict[str, Any] | None
    """Answers to the handler's awaited asks (:mod:`mcpcore.context.asks`)."""
    _request_id: str | None

    def __init__(self, method: str = "", jsonrpc_id: str | int | None = None, era: Era = Era.LEGACY,
                 services: ContextServices = _DEFAULT_SERVICES, auth: AuthInfo | None = None,
                 tenant_id: str | None = "default", protocol_version: str = "",
                 outbound: Outbound = _NULL_OUTBOUND, session: SessionRecord | None = None,
                 session_id: str | None = None, client_capabilities: dict[str, Any] | None = None,
                 client_info: dict[str, Any] | None = None, client_log_level: int | None = None,
                 progress_token: str | int | None = None, meta: dict[str, Any] | None = None,
                 input_responses: dict[str, Any] | None = None, request_state: str | None = None,
                 trace_headers: dict[str, str] | None = None, transport: str = "http",
                 signal: CancelSignal | None = None) -> None:
        self.method = method
        self.jsonrpc_id = jsonrpc_id
        self.era = era
        self.services = services
        self.auth = auth
        self.tenant_id = tenant_id
        self.protocol_version = protocol_version
        self.outbound = outbound
        self.session = session
        self.session_id = session_id
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.client_log_level = client_log_level
        self.progress_token = progress_token
        self.meta = meta
        self.input_responses = input_responses
        self.request_state = request_state
        self.trace_headers = trace_headers
        self.transport = transport
        self._signal = signal
        self.trace_id = None
        self.span_id = None
        self.check_sizes = False
        self.values = None
        self.asgi_scope = None
        self.started = time.time()
        self.task = None
        self.asked = None
        self._request_id = None

    @staticmethod
    def received(method: str, jsonrpc_id: str | int | None, era: Era, services: ContextServices,
                 auth: AuthInfo | None, tenant_id: str | None, protocol_version: str,
                 client_capabilities: dict[str, Any] | None, client_info: dict[str, Any] | None,
                 client_log_level: int | None, meta: dict[str, Any] | None) -> Inbound:
        """A transport's Inbound of one received request: what :meth:`__init__` builds from the
        same fields (the rest at their defaults, the transport ``"http"``), with every slot set
        in this one frame. A transport builds one per request; the constructor's call through
        ``type.__call__`` and its keyword defaults cost about a sixth more."""
        req = _new(Inbound)
        req.method = method
        req.jsonrpc_id = jsonrpc_id
        req.era = era
        req.services = services
        req.auth = auth
        req.tenant_id = tenant_id
        req.protocol_version = protocol_version
        req.outbound = _NULL_OUTBOUND
        req.session = None
        req.session_id = None
        req.client_capabilities = client_capabilities
        req.client_info = client_info
        req.client_log_level = client_log_level
        req.progress_token = None
        req.meta = meta
        req.input_responses = None
        req.request_state = None
        req.trace_headers = None
        req.transport = "http"
        req._signal = None
        req.trace_id = None
        req.span_id = None
        req.check_sizes = False
        req.values = None
        req.asgi_scope = None
        req.started = _time()
        req.task = None
        req.asked = None
        req._request_id = None
        return req

    def for_task(self) -> Inbound:
        """A copy of this call's request for a task it starts: the same caller, client, round
        answers and trace context; its own outbound, signal, values and task handle."""
        return Inbound(self.method, self.jsonrpc_id, self.era, self.services, self.auth, self.tenant_id,
                       protocol_version=self.protocol_version, client_capabilities=self.client_capabilities,
                       client_info=self.client_info, progress_token=self.progress_token,
                       client_log_level=self.client_log_level, input_responses=self.input_responses,
                       request_state=self.request_state, trace_headers=self.trace_headers, meta=self.meta,
                       transport=self.transport)

    def __repr__(self) -> str:
        return f"Inbound(method={self.method!r}, jsonrpc_id={self.jsonrpc_id!r}, era={self.era.value})"

    @property
    def signal(self) -> CancelSignal:
        """Fires when the request is cancelled (created on first use)."""
        sig = self._signal
        if sig is None:
            sig = self._signal = CancelSignal()
        return sig

    @property
    def request_id(self) -> str:
        """The client's id when it is a string, otherwise a generated ``XXXXX-XXXXX`` token."""
        rid = self._request_id
        if rid is None:
            j = self.jsonrpc_id
            rid = j if type(j) is str else new_request_token()
            self._request_id = rid
        return rid
