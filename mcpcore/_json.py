"""The one JSON codec of mcpcore: orjson in, orjson out.

Every byte that crosses the wire or reaches a store is encoded here, so the rules
(UTF-8, NaN and infinities as ``null``, integer and other non-string keys as strings, pydantic
models by alias) are the same everywhere.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["JSONDecodeError", "JSONEncodeError", "dumps", "dumps_str", "loads", "to_json"]

JSONDecodeError = orjson.JSONDecodeError
JSONEncodeError = orjson.JSONEncodeError

_OPTS = orjson.OPT_NON_STR_KEYS


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


to_json = _default
"""What :func:`dumps` encodes a value orjson does not know as (orjson's ``default``), for a
caller that calls orjson itself: a pydantic model by alias, a set or tuple as a list."""


def dumps(value: Any) -> bytes:
    """Serialise ``value`` to UTF-8 JSON bytes (pydantic models dumped by alias)."""
    try:
        return orjson.dumps(value, default=_default)
    except orjson.JSONEncodeError:  # non-string keys: orjson's option for them slows every call
        return orjson.dumps(value, default=_default, option=_OPTS)


def dumps_str(value: Any) -> str:
    """Serialise ``value`` to a JSON ``str``."""
    return dumps(value).decode()


loads = orjson.loads
"""Parse JSON bytes or text; raises :class:`JSONDecodeError` on bad input (orjson's own
function: every request body passes here, and a wrapper would cost a call)."""
