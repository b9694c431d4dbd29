"""The 2026-07-28 per-request envelope (``params._meta``) and its HTTP header mirror."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import JsonRpcErrorCode, McpError
from ..logs import LEVELS
from .versions import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
)

__all__ = ["Envelope", "check_headers", "decode_header_value", "read_envelope"]

_B64 = re.compile(r"^=\?base64\?([A-Za-z0-9+/=]*)\?=$")
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(slots=True)
class Envelope:
    """What a modern request says about itself."""

    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: int | None
    progress_token: str | int | None
    traceparent: str | None


def _missing(what: str) -> McpError:
    return McpError(JsonRpcErrorCode.InvalidParams, f"Missing required _meta field: {what}.",
                    {"reason": "missing_meta", "field": what})


def read_envelope(params: Mapping[str, Any] | None) -> Envelope:
    """Validate the envelope; raises ``-32602`` (missing/malformed) or ``-32022`` (version)."""
    meta = params.get("_meta") if params is not None else None
    if type(meta) is not dict:
        raise _missing("_meta")
    version = meta.get(META_PROTOCOL_VERSION)
    if type(version) is not str:
        raise _missing(META_PROTOCOL_VERSION)
    if version not in MODERN_VERSIONS:
        raise McpError(JsonRpcErrorCode.UnsupportedProtocolVersion, "Unsupported protocol version",
                       {"supported": list(MODERN_VERSIONS), "requested": version})
    caps = meta.get(META_CLIENT_CAPABILITIES)
    if type(caps) is not dict:
        raise _missing(META_CLIENT_CAPABILITIES)
    info = meta.get(META_CLIENT_INFO)
    if info is not None and type(info) is not dict:
        raise McpError(JsonRpcErrorCode.InvalidParams, f"{META_CLIENT_INFO} must be an object.")
    level = None
    raw_level = meta.get(META_LOG_LEVEL)
    if raw_level is not None:
        if type(raw_level) is not str or raw_level not in LEVELS:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"Invalid log level: {raw_level!r}",
                           {"supported": list(LEVELS)})
        level = LEVELS[raw_level]
    token = meta.get("progressToken")
    if token is not None and type(token) not in (str, int):
        raise McpError(JsonRpcErrorCode.InvalidParams, "progressToken must be a string or an integer.")
    tp = meta.get("traceparent")
    return Envelope(version, caps, info, level, token, tp if type(tp) is str else None)


def decode_header_value(raw: str) -> str:
    """Undo the ``=?base64?...?=`` encoding of MCP header values; raises ``ValueError``."""
    m = _B64.match(raw)
    if m is None:
        if _BAD_CHARS.search(raw):
            raise ValueError("control characters")
        return raw
    try:
        return base64.b64decode(m.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("bad base64 value") from None


def _mismatch(message: str) -> McpError:
    return McpError(JsonRpcErrorCode.HeaderMismatch, f"Header mismatch: {message}")


def _same(header: str, body: Any) -> bool:
    if type(body) is bool:
        return header == ("true" if body else "false")
    if type(body) is int:
        try:
            return float(header) == body
        except ValueError:
            return False
    return type(body) is str and header == body


_NAME_FIELD = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def check_headers(headers: Mapping[str, str], msg: Mapping[str, Any], version: str,
                  header_params: Mapping[str, str] | None) -> None:
    """Check ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` against
    the body; raises ``-32020`` HeaderMismatch."""
    pv = headers.get("mcp-protocol-version")
    if pv != version:
        if pv is None:
            raise _mismatch("missing MCP-Protocol-Version header")
        if pv.strip() != version:
            raise _mismatch(f"MCP-Protocol-Version header value '{pv.strip()}' does not match body value '{version}'")
    method = msg["method"]
    hm = headers.get("mcp-method")
    if hm != method:
        if hm is None:
            raise _mismatch("missing Mcp-Method header")
        if hm.strip() != method:
            raise _mismatch(f"Mcp-Method header value '{hm.strip()}' does not match body value '{method}'")
    params = msg.get("params") or {}
    name_field = _NAME_FIELD.get(method)
    if name_field is not None:
        hn = headers.get("mcp-name")
        body_name = params.get(name_field)
        if hn is None:
            raise _mismatch("missing Mcp-Name header")
        if hn != body_name or hn.startswith("=?"):
            try:
                decoded = decode_header_value(hn.strip())
            except ValueError:
                raise _mismatch("Mcp-Name header value is not a valid encoding") from None
            if decoded != body_name:
                raise _mismatch(f"Mcp-Name header value '{decoded}' does not match body value '{body_name}'")
    if header_params:
        raw_args = params.get("arguments")
        args: Mapping[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        for arg, hname in header_params.items():
            value = args.get(arg)
            raw = headers.get("mcp-param-" + hname.lower())
            if value is None:
                if raw is not None:
                    raise _mismatch(f"Mcp-Param-{hname} header sent but argument {arg!r} is absent")
                continue
            if raw is None:
                raise _mismatch(f"missing Mcp-Param-{hname} header for argument {arg!r}")
            try:
                decoded = decode_header_value(raw.strip())
            except ValueError:
                raise _mismatch(f"Mcp-Param-{hname} header value is not a valid encoding") from None
            if not _same(decoded, value):
                raise _mismatch(f"Mcp-Param-{hname} header value '{decoded}' does not match body value '{value}'")
