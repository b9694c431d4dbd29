"""The 2026-07-28 per-request envelope (``params._meta``) and its HTTP header mirror."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from ..errors import JsonRpcErrorCode, McpError, quoted
from ..logs import LEVELS
from .methods import METHODS
from .versions import MODERN_VERSIONS, SUPPORTED_VERSIONS

__all__ = ["MIRRORED", "MODERN", "VERBATIM_NAMES", "VERSION_BYTES", "check_headers", "decode_header_value",
           "invalid_log_level", "missing_meta", "unsupported_version"]

_B64 = re.compile(r"^=\?base64\?([A-Za-z0-9+/=]*)\?=$")
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f]")
MODERN = frozenset(MODERN_VERSIONS)
"""The revisions a 2026-07-28 envelope may name."""


def missing_meta(what: str) -> McpError:
    """The envelope lacks ``what`` (or it has the wrong type): ``-32602``, ``reason = "missing_meta"``."""
    return McpError(JsonRpcErrorCode.InvalidParams, f"Missing required _meta field: {what}.",
                    {"reason": "missing_meta", "field": what})


def unsupported_version(requested: str) -> McpError:
    """The envelope names a revision this server does not serve per request: ``-32022``, listing
    every revision it serves, the 2025 ones (reached through ``initialize``) included."""
    return McpError(JsonRpcErrorCode.UnsupportedProtocolVersion, "Unsupported protocol version",
                    {"supported": list(SUPPORTED_VERSIONS), "requested": quoted(requested)})


def invalid_log_level(raw: object) -> McpError:
    """The envelope's log level is not one of the syslog names."""
    return McpError(JsonRpcErrorCode.InvalidParams, f"Invalid log level: {quoted(raw)!r}", {"supported": list(LEVELS)})


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


MIRRORED = {m.name: (m.name.encode(), m.names_by if m.mirrored else None) for m in METHODS}
"""Per method: the bytes of the ``Mcp-Method`` header naming it verbatim, and the params field
its ``Mcp-Name`` mirrors (``None``: it has no ``Mcp-Name``); one lookup for both. A request
whose headers are these verbatim, with the version's :data:`VERSION_BYTES` and a name of
:data:`VERBATIM_NAMES`, passes :func:`check_headers` (a caller may compare them itself)."""
_NO_ROW: tuple[bytes | None, str | None] = (None, None)
# The header bytes of the versions a matching request carries verbatim.
VERSION_BYTES = {v: v.encode() for v in MODERN_VERSIONS}


VERBATIM_NAMES: dict[str, bytes] = {}
"""Names seen in ``Mcp-Name`` verbatim (their latin-1 bytes, not an encoded form): a header that
is these bytes matches its body without decoding."""


def _check_name(raw: bytes, body_name: Any) -> None:
    hn = raw.decode("latin-1")
    if hn != body_name or hn.startswith("=?"):
        try:
            decoded = decode_header_value(hn.strip())
        except ValueError:
            raise _mismatch("Mcp-Name header value is not a valid encoding") from None
        if decoded != body_name:
            raise _mismatch(f"Mcp-Name header value '{quoted(decoded)}' does not match body value "
                           f"'{quoted(body_name)}'")
    elif len(VERBATIM_NAMES) < 1024:  # names are client-chosen: keep the memo bounded
        VERBATIM_NAMES[hn] = raw


def check_headers(headers: Mapping[bytes, bytes], msg: Mapping[str, Any], version: str,
                  header_params: Mapping[str, str] | None) -> None:
    """Check ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` against
    the body; raises ``-32020`` HeaderMismatch. ``headers``: raw ASGI names and values."""
    raw = headers.get(b"mcp-protocol-version")
    if raw is None:
        raise _mismatch("missing MCP-Protocol-Version header")
    if raw != VERSION_BYTES.get(version):
        pv = raw.decode("latin-1").strip()
        if pv != version:
            raise _mismatch(f"MCP-Protocol-Version header value '{quoted(pv)}' does not match body value "
                               f"'{quoted(version)}'")
    method = msg["method"]
    row = MIRRORED.get(method, _NO_ROW)
    raw = headers.get(b"mcp-method")
    if raw is None:
        raise _mismatch("missing Mcp-Method header")
    if raw != row[0]:
        hm = raw.decode("latin-1").strip()
        if hm != method:
            raise _mismatch(f"Mcp-Method header value '{quoted(hm)}' does not match body value '{quoted(method)}'")
    params = msg.get("params") or {}
    name_field = row[1]
    if name_field is not None:
        raw = headers.get(b"mcp-name")
        if raw is None:
            raise _mismatch("missing Mcp-Name header")
        body_name = params.get(name_field)
        if type(body_name) is not str or raw != VERBATIM_NAMES.get(body_name):
            _check_name(raw, body_name)
    if header_params:
        raw_args = params.get("arguments")
        args: Mapping[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        for arg, hname in header_params.items():
            value = args.get(arg)
            sent = headers.get(b"mcp-param-" + hname.lower().encode("latin-1"))
            text = sent.decode("latin-1") if sent is not None else None
            if value is None:
                if text is not None:
                    raise _mismatch(f"Mcp-Param-{hname} header sent but argument {arg!r} is absent")
                continue
            if text is None:
                raise _mismatch(f"missing Mcp-Param-{hname} header for argument {arg!r}")
            try:
                decoded = decode_header_value(text.strip())
            except ValueError:
                raise _mismatch(f"Mcp-Param-{hname} header value is not a valid encoding") from None
            if not _same(decoded, value):
                raise _mismatch(f"Mcp-Param-{hname} header value '{quoted(decoded)}' does not match body value "
                               f"'{quoted(value)}'")
