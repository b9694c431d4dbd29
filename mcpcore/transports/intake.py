"""One intake: the :class:`~mcpcore.context.Inbound` of a request, for every era and transport.

A transport reads its framing (HTTP headers and body, a stdin line, an SSE connection's POST),
then asks here for the request's Inbound. What the request says about itself is copied in one
way for everyone: the 2026-07-28 envelope from ``params._meta`` (:func:`modern_inbound`), the
2025 session's record or the sessionless defaults (:func:`session_inbound`), and the fields both
eras share (``inputResponses``, ``requestState``, the progress token). A malformed envelope is
returned as a value, so each transport answers it its own way (a 400 over HTTP, a line on
stdout).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..context import AuthInfo, ContextServices, Inbound
from ..errors import JsonRpcErrorCode, McpError
from ..logs import LEVELS
from ..protocol.envelope import MODERN, invalid_log_level, missing_meta, unsupported_version
from ..protocol.versions import (
    ERA_LEGACY,
    ERA_MODERN,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
)
from ..sessions.base import SessionRecord

__all__ = ["Refused", "modern_inbound", "notification_inbound", "session_inbound"]

DEFAULT_LEGACY_VERSION = "2025-03-26"
"""The revision of a sessionless 2025-era request that names none."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A request the intake cannot take: the error to answer, and the request id it quotes."""

    error: McpError
    request_id: str


def _shared(req: Inbound, params: dict[str, Any]) -> None:
    ir = params.get("inputResponses")
    if type(ir) is dict:
        req.input_responses = ir
    rs = params.get("requestState")
    if type(rs) is str:
        req.request_state = rs


def modern_inbound(msg: dict[str, Any], services: ContextServices, auth: AuthInfo | None, tenant_id: str | None,
                   transport: str = "http") -> Inbound | Refused:
    """A 2026-07-28 request's Inbound, from its envelope; :class:`Refused` when the envelope is
    missing or malformed (``-32602``) or names an unknown revision (``-32022``)."""
    params = msg.get("params") or {}
    req = Inbound(msg["method"], msg["id"], ERA_MODERN, services, auth, tenant_id)
    if transport != "http":
        req.transport = transport
    meta = params.get("_meta")
    if type(meta) is not dict:
        return Refused(missing_meta(META_PROTOCOL_VERSION), req.request_id)
    version = meta.get(META_PROTOCOL_VERSION)
    if type(version) is not str:
        return Refused(missing_meta(META_PROTOCOL_VERSION), req.request_id)
    if version not in MODERN:
        return Refused(unsupported_version(version), req.request_id)
    caps = meta.get(META_CLIENT_CAPABILITIES)
    if type(caps) is not dict:
        return Refused(missing_meta(META_CLIENT_CAPABILITIES), req.request_id)
    info = meta.get(META_CLIENT_INFO)
    if info is not None and type(info) is not dict:
        return Refused(McpError(JsonRpcErrorCode.InvalidParams, f"{META_CLIENT_INFO} must be an object."),
                       req.request_id)
    if len(meta) > 2:  # beyond the version and the capabilities: a log level, a progress token
        refused = _optional_meta(meta, req)
        if refused is not None:
            return refused
    req.protocol_version = version
    req.client_capabilities = caps
    req.client_info = info
    req.meta = meta
    if "inputResponses" in params or "requestState" in params:
        _shared(req, params)
    return req


def _optional_meta(meta: dict[str, Any], req: Inbound) -> Refused | None:
    raw_level = meta.get(META_LOG_LEVEL)
    if raw_level is not None:
        if type(raw_level) is not str or raw_level not in LEVELS:
            return Refused(invalid_log_level(raw_level), req.request_id)
        req.client_log_level = LEVELS[raw_level]
    token = meta.get("progressToken")
    if token is not None:
        if type(token) is not str and type(token) is not int:
            return Refused(McpError(JsonRpcErrorCode.InvalidParams, "progressToken must be a string or an integer."),
                           req.request_id)
        req.progress_token = token
    return None


def session_inbound(msg: dict[str, Any], services: ContextServices, auth: AuthInfo | None, tenant_id: str | None,
                    record: SessionRecord | None, *, version: str | None = None, session_id: str | None = None,
                    transport: str = "http") -> Inbound:
    """A 2025-era request's Inbound: what its session recorded at ``initialize`` or, with no
    session, the revision it names (``version``) and the id it is given (``session_id``)."""
    req = Inbound(msg["method"], msg["id"], ERA_LEGACY, services, auth, tenant_id)
    if transport != "http":
        req.transport = transport
    if record is not None:
        req.session = record
        req.session_id = record.id if transport == "http" else None
        req.protocol_version = record.protocol_version
        req.client_capabilities = record.client_capabilities
        req.client_info = record.client_info
        req.client_log_level = LEVELS[record.log_level] if record.log_level else 0
    else:
        req.session_id = session_id
        req.protocol_version = version or DEFAULT_LEGACY_VERSION
        req.client_log_level = 0
    params = msg.get("params")
    if params:
        meta = params.get("_meta")
        if type(meta) is dict:
            req.meta = meta
            token = meta.get("progressToken")
            if type(token) is str or type(token) is int:
                req.progress_token = token
        if "inputResponses" in params or "requestState" in params:
            _shared(req, params)
    return req


def notification_inbound(msg: dict[str, Any], services: ContextServices, auth: AuthInfo | None,
                         tenant_id: str | None, record: SessionRecord | None, transport: str = "http") -> Inbound:
    """The Inbound of a client notification (what the middleware's ``on_notification`` sees):
    as a request of its session, without an id."""
    return session_inbound({"method": msg["method"], "id": None, "params": msg.get("params")}, services, auth,
                           tenant_id, record, session_id=record.id if record is not None else None,
                           transport=transport)
