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
from ..context.inbound import new_request_token
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
    meta = params.get("_meta")
    if type(meta) is not dict:
        return _refused(msg, missing_meta(META_PROTOCOL_VERSION))
    version = meta.get(META_PROTOCOL_VERSION)
    if type(version) is not str:
        return _refused(msg, missing_meta(META_PROTOCOL_VERSION))
    if version not in MODERN:
        return _refused(msg, unsupported_version(version))
    caps = meta.get(META_CLIENT_CAPABILITIES)
    if type(caps) is not dict:
        return _refused(msg, missing_meta(META_CLIENT_CAPABILITIES))
    info = meta.get(META_CLIENT_INFO)
    if info is not None and type(info) is not dict:
        return _refused(msg, McpError(JsonRpcErrorCode.InvalidParams, f"{META_CLIENT_INFO} must be an object."))
    req = Inbound.received(msg["method"], msg["id"], ERA_MODERN, services, auth, tenant_id, version, caps, info,
                           None, meta)
    if transport != "http":
        req.transport = transport
    if len(meta) > 2:  # beyond the version and the capabilities: a log level, a progress token
        refused = _optional_meta(meta, req)
        if refused is not None:
            return refused
    if "inputResponses" in params or "requestState" in params:
        _shared(req, params)
    return req


def _refused(msg: dict[str, Any], error: McpError) -> Refused:
    """The envelope's ``error``, quoting the id a request's Inbound would give it."""
    rid = msg["id"]
    return Refused(error, rid if type(rid) is str else new_request_token())


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
    if record is not None:
        req = Inbound.received(msg["method"], msg["id"], ERA_LEGACY, services, auth, tenant_id,
                               record.protocol_version, record.client_capabilities, record.client_info,
                               LEVELS[record.log_level] if record.log_level else 0, None)
        req.session = record
        req.session_id = record.id if transport == "http" else None
    else:
        req = Inbound.received(msg["method"], msg["id"], ERA_LEGACY, services, auth, tenant_id,
                               version or DEFAULT_LEGACY_VERSION, None, None, 0, None)
        req.session_id = session_id
    if transport != "http":
        req.transport = transport
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
