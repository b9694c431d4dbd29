"""Bounds on the strings a caller chooses: ids, tokens, names, URIs, argument keys.

Each is far above what any real client sends, and low enough that nothing a caller sends is
stored, echoed or buffered at a size it picked. Past a bound the request is refused with
``-32600`` (an id or a method) or ``-32602`` (a parameter) and nothing of it is kept. An error
that quotes a caller's string quotes at most :data:`~mcpcore.errors.QUOTE_MAX` characters of it
(:func:`~mcpcore.errors.quoted`).
"""

from __future__ import annotations

from typing import Any

from ..errors import JsonRpcErrorCode, McpError
from .methods import METHODS

__all__ = ["MAX_ARGUMENT_KEY", "MAX_ID", "MAX_METHOD", "MAX_NAME", "MAX_TOKEN", "MAX_URI", "SHORTEST_BOUND",
           "check_params"]

MAX_ID = 256
"""Characters of a string JSON-RPC id."""
MAX_METHOD = 128
"""Characters of a method name."""
MAX_TOKEN = 256
"""Characters of a string ``progressToken``."""
MAX_NAME = 256
"""Characters of a tool, prompt or completion-reference name (definitions allow 128)."""
MAX_URI = 4096
"""Characters of a resource URI."""
MAX_ARGUMENT_KEY = 256
"""Characters of an argument name."""

SHORTEST_BOUND = min(MAX_ID, MAX_TOKEN, MAX_NAME, MAX_URI, MAX_ARGUMENT_KEY)
"""A message of at most this many bytes holds no string past any bound (a JSON string takes at
least a byte per character), so a transport may skip :func:`check_params` for it."""

# The names and URIs a call names (a task id is the server's own, checked by the task store).
_NAMED = {m.name: m.names_by for m in METHODS if m.names_by == "name" or m.names_by == "uri"}


def _too_long(what: str, limit: int) -> McpError:
    return McpError(JsonRpcErrorCode.InvalidParams, f"{what} is longer than {limit} characters.",
                    {"reason": "too_long", "limit": limit})


def check_params(method: str, params: dict[str, Any], progress_token: object) -> None:
    """Refuse a request whose name, URI, argument keys or progress token is over its bound.

    Raises:
        McpError: ``-32602`` naming the field and the bound (never echoing the value).
    """
    if type(progress_token) is str and len(progress_token) > MAX_TOKEN:
        raise _too_long("progressToken", MAX_TOKEN)
    field = _NAMED.get(method)
    if field is None:
        return
    value = params.get(field)
    limit = MAX_URI if field == "uri" else MAX_NAME
    if type(value) is str and len(value) > limit:
        raise _too_long(f'"{field}"', limit)
    args = params.get("arguments")
    if type(args) is dict:
        for key in args:
            if len(key) > MAX_ARGUMENT_KEY:
                raise _too_long("An argument name", MAX_ARGUMENT_KEY)
