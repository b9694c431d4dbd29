"""The methods about the connection itself: ``initialize``, ``ping``, ``logging/setLevel`` (2025
era) and ``server/discover`` (2026-07-28)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _json
from ..context import Inbound
from ..errors import JsonRpcErrorCode, McpError, quoted
from ..logs import LEVELS, normalize_level
from ..protocol.versions import SUPPORTED_VERSIONS, negotiate

if TYPE_CHECKING:
    from .core import ServerCore

__all__ = ["discover", "initialize", "ping", "set_level"]


def _normalize_capabilities(caps: Any) -> dict[str, Any]:
    """The 2025-era view of client capabilities: a bare ``elicitation: {}`` means form mode."""
    if type(caps) is not dict:
        return {}
    out = dict(caps)
    el = out.get("elicitation")
    if type(el) is dict and not el:
        out["elicitation"] = {"form": {}}
    return out


async def initialize(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    """``initialize``: negotiate the version and record the client on the request and session."""
    version = negotiate(params.get("protocolVersion"))
    caps = _normalize_capabilities(params.get("capabilities"))
    info = params.get("clientInfo") if type(params.get("clientInfo")) is dict else None
    limit = core.settings.max_client_metadata_bytes
    if len(_json.dumps(caps)) + (len(_json.dumps(info)) if info else 0) > limit:
        raise McpError(JsonRpcErrorCode.InvalidParams, f"capabilities and clientInfo exceed {limit} bytes.",
                       {"reason": "too_large", "limit": limit})
    req.protocol_version = version
    req.client_capabilities = caps
    req.client_info = info
    session = req.session
    if session is not None:
        session.protocol_version = version
        session.client_capabilities = caps
        session.client_info = info
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": core.legacy_capabilities(),
        "serverInfo": core.server_info,
    }
    if core.instructions:
        result["instructions"] = core.instructions
    return result


async def ping(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    """``ping``: an empty result."""
    return {}


async def set_level(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    """``logging/setLevel``: the least severe level the client wants sent, kept on its session."""
    raw = params.get("level")
    level = normalize_level(raw) if type(raw) is str else None
    if level is None or raw != level:
        raise McpError(JsonRpcErrorCode.InvalidParams, f"Invalid log level: {quoted(raw)!r}",
                       {"supported": list(LEVELS)})
    session = req.session
    if session is not None:
        session.log_level = level
        await core.save_session(session)
    req.client_log_level = LEVELS[level]
    return {}


async def discover(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
    """``server/discover``: the versions (every one served, newest first: 2026-07-28 per request,
    the 2025 ones through ``initialize``), capabilities and instructions of this server."""
    result: dict[str, Any] = {"supportedVersions": list(SUPPORTED_VERSIONS), "capabilities": core.capabilities()}
    if core.instructions:
        result["instructions"] = core.instructions
    return result
