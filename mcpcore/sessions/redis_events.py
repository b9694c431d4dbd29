"""The event buffer in Redis: one Stream per session (``XADD`` with ``MAXLEN`` and age
trimming, key TTL), readable and followable from every instance."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncGenerator
from typing import Any

from ..redis_client import guarded
from .events import END

__all__ = ["RedisEventBuffer", "events_key"]


def events_key(namespace: str, session_id: str) -> str:
    """A session's stream: its own hash tag, so a Cluster spreads the streams over its nodes."""
    return f"{{{namespace}:s:{session_id}}}:events"

_ENTRY_ID = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")


# Append one event and keep the stream within its bounds, in one step: at most max events and
# max bytes of data (a counter beside the stream), nothing older than the TTL; the oldest entries
# leave first, and the newest always stays.
# KEYS: the stream, its byte counter. ARGV: stream id, data, end flag ('' or '1'), max events,
# max bytes, oldest id kept (ms), TTL ms. Returns the new entry's id.
_APPEND = """
local fields = {'s', ARGV[1], 'd', ARGV[2]}
if ARGV[3] ~= '' then fields[5] = 'e'; fields[6] = '1' end
local id = redis.call('XADD', KEYS[1], '*', unpack(fields))
local size = redis.call('INCRBY', KEYS[2], string.len(ARGV[2]))
local max_events, max_bytes, min_ms = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local count = redis.call('XLEN', KEYS[1])
while count > 1 do
  local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
  local ms = tonumber(string.match(first[1], '^(%d+)'))
  if count <= max_events and size <= max_bytes and ms >= min_ms then break end
  local f = first[2]
  for i = 1, #f, 2 do
    if f[i] == 'd' then size = size - string.len(f[i + 1]) end
  end
  redis.call('XDEL', KEYS[1], first[1])
  count = count - 1
end
redis.call('SET', KEYS[2], size, 'PX', ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return id
"""


class RedisEventBuffer:
    """Stream entries carry ``s`` (stream id) and ``d`` (data) fields; an entry with ``e`` ends
    its stream. Event ids are ``<streamId>_<redis entry id>``. Each session's stream holds at
    most ``max_events`` entries and ``max_bytes`` of data (``MCP_HTTP_RESUMABILITY_MAX_BYTES``).
    While Redis is unreachable every operation raises ``McpError(ServiceUnavailable)``."""

    def __init__(self, client: Any, *, namespace: str = "mcpcore", max_events: int = 512,
                 ttl_ms: int = 300_000, block_ms: int = 1000, max_bytes: int = 1_048_576) -> None:
        self.r = client
        self.ns = namespace
        self.max_events = max_events
        self.ttl_ms = ttl_ms
        self.block_ms = block_ms
        self.max_bytes = max_bytes
        self._append = client.register_script(_APPEND)

    def key(self, session_id: str) -> str:
        return events_key(self.ns, session_id)

    async def _add(self, session_id: str, stream_id: str, data: bytes, end: bool = False) -> str:
        key = self.key(session_id)
        min_ms = max(0, int(time.time() * 1000) - self.ttl_ms)
        entry = await guarded(self._append(keys=[key, key + ":bytes"], args=[
            stream_id, data, "1" if end else "", self.max_events, self.max_bytes, min_ms, self.ttl_ms]))
        return entry.decode() if isinstance(entry, bytes) else str(entry)

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        return f"{stream_id}_{await self._add(session_id, stream_id, data)}"

    async def end(self, session_id: str, stream_id: str) -> None:
        await self._add(session_id, stream_id, END, True)

    async def bytes_of(self, session_id: str) -> int:
        """Bytes of event data the session's stream holds."""
        raw = await self.r.get(self.key(session_id) + ":bytes")
        return int(raw) if raw is not None else 0

    async def follow(self, session_id: str, stream_id: str,
                     after: str | None) -> AsyncGenerator[tuple[str, bytes], None]:
        key = self.key(session_id)
        last = "0-0"
        if after is not None:
            if _ENTRY_ID.fullmatch(after) is None:
                raise LookupError(after)
            found = await guarded(self.r.xrange(key, min=after, max=after, count=1))
            if not found or _field(found[0][1], "s") != stream_id:
                raise LookupError(after)
            last = after
        while True:
            batch = await guarded(self.r.xread({key: last}, count=200, block=self.block_ms))
            if not batch:
                if not await guarded(self.r.exists(key)):
                    return
                continue
            for entry_id, fields in batch[0][1]:
                eid = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                last = eid
                if _field(fields, "s") != stream_id:
                    continue
                if _field(fields, "e") is not None:
                    return
                data = fields.get(b"d", fields.get("d", b""))
                yield f"{stream_id}_{eid}", data if isinstance(data, bytes) else str(data).encode()

    async def release(self, session_id: str) -> None:
        key = self.key(session_id)
        await guarded(self.r.delete(key, key + ":bytes"))


def _field(fields: dict[Any, Any], name: str) -> str | None:
    v = fields.get(name.encode(), fields.get(name))
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)
