"""The rules every ``ctx.state`` provider shares: key charset, JSON round trip, tenant
checks and signed cursors. Providers only ever see validated keys and JSON bytes."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import JsonRpcErrorCode, McpError
from .base import StorageProvider

__all__ = ["CursorSigner", "StateService", "decode_value", "encode_value", "validate_key"]

T = TypeVar("T")
log = logging.getLogger("mcpcore.storage")

KEY_RE = re.compile(r"^[a-zA-Z0-9_.\-/]+$")
MAX_KEY = 1024
MAX_PREFIX = 512
MAX_LIMIT = 10_000
DEFAULT_LIMIT = 1000


def _invalid(message: str) -> McpError:
    return McpError(JsonRpcErrorCode.ValidationError, message)


def validate_key(key: object, what: str = "key") -> str:
    """Check one state key: ``^[a-zA-Z0-9_.\\-/]+$``, at most 1024 characters, no ``..``."""
    if not isinstance(key, str):
        raise _invalid(f"State {what} must be a string, got {type(key).__name__}.")
    if not key or len(key) > MAX_KEY:
        raise _invalid(f"State {what} must be 1-{MAX_KEY} characters long.")
    if not KEY_RE.fullmatch(key):
        raise _invalid(f"State {what} {key[:80]!r} has a character outside [a-zA-Z0-9_.-/] "
                       "(use '/' as the namespace separator).")
    if ".." in key:
        raise _invalid(f"State {what} {key[:80]!r} must not contain '..'.")
    return key


def validate_prefix(prefix: object) -> str:
    if prefix is None or prefix == "":
        return ""
    if not isinstance(prefix, str) or len(prefix) > MAX_PREFIX:
        raise _invalid(f"A list prefix must be a string of at most {MAX_PREFIX} characters.")
    if not KEY_RE.fullmatch(prefix) or ".." in prefix:
        raise _invalid(f"List prefix {prefix[:80]!r} has a character outside [a-zA-Z0-9_.-/] or contains '..'.")
    return prefix


def _check_finite(value: Any, depth: int = 0) -> None:
    if depth > 250:
        raise McpError(JsonRpcErrorCode.SerializationError, "Value is cyclic or nested too deeply to store as JSON.")
    t = type(value)
    if t is float:
        if not math.isfinite(value):
            raise McpError(JsonRpcErrorCode.SerializationError, "NaN and infinities are not JSON; cannot store them.")
    elif t is dict:
        for v in value.values():
            _check_finite(v, depth + 1)
    elif t is list or t is tuple:
        for v in value:
            _check_finite(v, depth + 1)


def encode_value(value: Any) -> bytes:
    """A value's JSON bytes, or ``McpError(SerializationError)`` for anything JSON cannot carry
    (bytes, sets, NaN, cycles, functions, integers beyond +/-2**53)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    _check_finite(value)
    try:
        return orjson.dumps(value, option=orjson.OPT_STRICT_INTEGER | orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise McpError(JsonRpcErrorCode.SerializationError,
                       f"Value cannot be stored as JSON: {str(exc).split(':')[0]}.") from exc


def decode_value(raw: bytes) -> Any:
    return orjson.loads(raw)


class CursorSigner:
    """Signs list cursors with HMAC-SHA256 so they are opaque, bound to tenant and prefix,
    and valid across restarts and replicas that share a key. The first key signs; every key
    verifies (rotation)."""

    def __init__(self, keys: Iterable[bytes]) -> None:
        self._keys = [k for k in keys if k]
        if not self._keys:
            raise ValueError("at least one cursor key is required")

    @classmethod
    def from_settings(cls, cursor_key: str | None, request_state_key: str | None) -> CursorSigner:
        raw = cursor_key or request_state_key
        if raw:
            return cls(k.strip().encode() for k in raw.split(",") if k.strip())
        log.warning("MCP_STORAGE_CURSOR_KEY and MCP_REQUEST_STATE_KEY are unset: ctx.state list cursors are "
                    "signed with a per-process key and stop working after a restart or on another replica")
        return cls([os.urandom(32)])

    def _mac(self, key: bytes, payload: bytes) -> bytes:
        return hmac.new(key, payload, hashlib.sha256).digest()[:16]

    def encode(self, tenant: str, prefix: str, last_key: str) -> str:
        payload = orjson.dumps({"t": tenant, "p": prefix, "k": last_key})
        token = base64.urlsafe_b64encode(payload + self._mac(self._keys[0], payload))
        return token.decode().rstrip("=")

    def decode(self, tenant: str, prefix: str, cursor: object) -> str:
        """The last key a valid cursor names; ``McpError(InvalidParams)`` for anything else."""
        bad = McpError(JsonRpcErrorCode.InvalidParams, "Invalid or foreign list cursor.", {"reason": "invalid_cursor"})
        if not isinstance(cursor, str) or len(cursor) > 4096:
            raise bad
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (ValueError, TypeError):
            raise bad from None
        if len(raw) < 17:
            raise bad
        payload, mac = raw[:-16], raw[-16:]
        if not any(hmac.compare_digest(mac, self._mac(k, payload)) for k in self._keys):
            raise bad
        try:
            data = orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise bad from None
        if not isinstance(data, dict) or data.get("t") != tenant or data.get("p") != prefix:
            raise bad
        key = data.get("k")
        if not isinstance(key, str):
            raise bad
        return key


class StateService:
    """Validates and serialises, then calls a provider; shared by every ``ctx.state``."""

    def __init__(self, provider: StorageProvider, signer: CursorSigner, telemetry: Any = None) -> None:
        self.provider = provider
        self.signer = signer
        self.telemetry = telemetry

    def _span(self, op: str) -> Any:
        return self.telemetry.storage(op) if self.telemetry is not None else contextlib.nullcontext()

    @staticmethod
    def _tenant(tenant: str | None) -> str:
        if not tenant:
            raise McpError(JsonRpcErrorCode.InvalidRequest,
                           "Tenant ID is required for state operations; the caller's token carries no 'tid' claim.",
                           {"reason": "tenant_required"})
        return tenant

    async def get(self, tenant: str | None, key: str, model: Any = None) -> Any:
        with self._span("get"):
            raw = await self.provider.get(self._tenant(tenant), validate_key(key))
        if raw is None:
            return None
        return _validate(decode_value(raw), model, key)

    async def set(self, tenant: str | None, key: str, value: Any, ttl: float | None = None) -> None:
        t = self._tenant(tenant)
        validate_key(key)
        _check_ttl(ttl)
        with self._span("set"):
            await self.provider.set(t, key, encode_value(value), ttl)

    async def delete(self, tenant: str | None, key: str) -> bool:
        with self._span("delete"):
            return await self.provider.delete(self._tenant(tenant), validate_key(key))

    async def take(self, tenant: str | None, key: str, model: Any = None) -> Any:
        with self._span("take"):
            raw = await self.provider.take(self._tenant(tenant), validate_key(key))
        if raw is None:
            return None
        return _validate(decode_value(raw), model, key)

    async def get_many(self, tenant: str | None, keys: Sequence[str]) -> dict[str, Any]:
        t = self._tenant(tenant)
        for k in _keys(keys):
            validate_key(k)
        with self._span("get_many"):
            raw = await self.provider.get_many(t, list(dict.fromkeys(keys)))
        return {k: decode_value(v) for k, v in raw.items()}

    async def set_many(self, tenant: str | None, entries: Mapping[str, Any] | Iterable[tuple[str, Any]],
                       ttl: float | None = None) -> None:
        t = self._tenant(tenant)
        _check_ttl(ttl)
        items = dict(entries.items() if isinstance(entries, Mapping) else entries)
        encoded = {validate_key(k): encode_value(v) for k, v in items.items()}
        if encoded:
            with self._span("set_many"):
                await self.provider.set_many(t, encoded, ttl)

    async def delete_many(self, tenant: str | None, keys: Sequence[str]) -> int:
        t = self._tenant(tenant)
        for k in _keys(keys):
            validate_key(k)
        if not keys:
            return 0
        with self._span("delete_many"):
            return await self.provider.delete_many(t, list(dict.fromkeys(keys)))

    async def list(self, tenant: str | None, prefix: str = "", cursor: str | None = None,
                   limit: int | None = None) -> dict[str, Any]:
        t = self._tenant(tenant)
        prefix = validate_prefix(prefix)
        if limit is None:
            limit = DEFAULT_LIMIT
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise _invalid(f"List limit must be an integer from 1 to {MAX_LIMIT}.")
        after = self.signer.decode(t, prefix, cursor) if cursor is not None else None
        with self._span("list"):
            items, more = await self.provider.list(t, prefix, after, limit)
        page: dict[str, Any] = {"items": [{"key": k, "value": decode_value(v)} for k, v in items]}
        if more and items:
            page["cursor"] = self.signer.encode(t, prefix, items[-1][0])
        return page


def _keys(keys: Sequence[str]) -> Sequence[str]:
    if isinstance(keys, str) or not isinstance(keys, (list, tuple, set, frozenset)):
        raise _invalid("Batch operations take a list of keys.")
    return list(keys)


def _check_ttl(ttl: float | None) -> None:
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0
                            or not math.isfinite(ttl)):
        raise _invalid("ttl must be a positive number of seconds.")


def _validate(value: Any, model: Any, key: str) -> Any:
    if model is None:
        return value
    try:
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model.model_validate(value)
        return TypeAdapter(model).validate_python(value)
    except ValidationError as exc:
        raise McpError(JsonRpcErrorCode.ValidationError,
                       f"Stored value at {key!r} does not match the expected schema.",
                       {"issues": [e["msg"] for e in exc.errors()][:10]}) from exc
