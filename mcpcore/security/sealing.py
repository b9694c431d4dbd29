"""Sealed ``requestState``: HMAC-SHA256 over the handler's string, bound to the caller, the
operation and an expiry. Signed, not encrypted: never put a secret in request state.

Format: ``base64url(payload) "." base64url(mac)`` where ``payload`` is compact JSON
``{"v": 1, "s": state, "o": operation, "c": client id, "u": subject, "t": tenant, "e": expiry}``.
Keys rotate: the first key signs, every key verifies.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Callable, Sequence

import orjson

from ..errors import ConfigurationError, JsonRpcErrorCode, McpError

__all__ = ["RequestStateSealer", "invalid_state"]

MIN_KEY_BYTES = 32
DEFAULT_TTL = 900


def invalid_state(detail: str) -> McpError:
    return McpError(JsonRpcErrorCode.InvalidParams, f"Invalid requestState: {detail}.",
                    {"reason": "invalid_request_state"})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class RequestStateSealer:
    """Seal and verify request state with one or more keys (``MCP_REQUEST_STATE_KEY``)."""

    def __init__(self, keys: Sequence[bytes], *, ttl: int = DEFAULT_TTL,
                 clock: Callable[[], float] = time.time) -> None:
        if not keys:
            raise ConfigurationError("MCP_REQUEST_STATE_KEY: at least one key is required")
        for k in keys:
            if len(k) < MIN_KEY_BYTES:
                raise ConfigurationError(f"MCP_REQUEST_STATE_KEY: every key must be at least {MIN_KEY_BYTES} bytes")
        self._keys = list(keys)
        self.ttl = ttl
        self._clock = clock

    @classmethod
    def from_setting(cls, raw: str | None) -> RequestStateSealer | None:
        """Build from the comma-separated setting; ``None`` when unset."""
        if not raw:
            return None
        return cls([k.strip().encode() for k in raw.split(",") if k.strip()])

    def _mac(self, key: bytes, payload: bytes) -> bytes:
        return hmac.new(key, payload, hashlib.sha256).digest()

    def seal(self, state: str, *, operation: str, client_id: str, subject: str, tenant: str) -> str:
        payload = orjson.dumps({"v": 1, "s": state, "o": operation, "c": client_id, "u": subject, "t": tenant,
                                "e": int(self._clock()) + self.ttl})
        return f"{_b64(payload)}.{_b64(self._mac(self._keys[0], payload))}"

    def unseal(self, token: object, *, operation: str, client_id: str, subject: str, tenant: str) -> str:
        """The original state, or ``McpError(-32602, reason=invalid_request_state)``."""
        if not isinstance(token, str) or len(token) > 65536 or token.count(".") != 1:
            raise invalid_state("not a sealed state")
        body, mac_text = token.split(".")
        try:
            payload, mac = _unb64(body), _unb64(mac_text)
        except (binascii.Error, ValueError):
            raise invalid_state("not a sealed state") from None
        if not any(hmac.compare_digest(mac, self._mac(k, payload)) for k in self._keys):
            raise invalid_state("signature does not verify")
        try:
            data = orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise invalid_state("malformed payload") from None
        if not isinstance(data, dict) or data.get("v") != 1 or not isinstance(data.get("s"), str):
            raise invalid_state("malformed payload")
        if not isinstance(data.get("e"), int) or data["e"] < self._clock():
            raise invalid_state("expired")
        if data.get("o") != operation:
            raise invalid_state("minted for another operation")
        if (data.get("c"), data.get("u"), data.get("t")) != (client_id, subject, tenant):
            raise invalid_state("minted for another caller")
        return str(data["s"])
