"""The event buffer in Redis: one Stream per session (``XADD`` with ``MAXLEN`` and age
trimming, key TTL), readable and followable from every instance."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Any

from ..redis_client import guarded
from .events import END

__all__ = ["RedisEventBuffer", "events_key"]


def events_key(namespace: str, session_id: str) -> str:
    """A session's stream: its own hash tag, so a Cluster spreads the streams over its nodes."""
    return f"{{{namespace}:s:{session_id}}}:events"


class RedisEventBuffer:
    """Stream entries carry ``s`` (stream id) and ``d`` (data) fields; an entry with ``e`` ends
    its stream. Event ids are ``<streamId>_<redis entry id>``. While Redis is unreachable every
    operation raises ``McpError(ServiceUnavailable)``."""

    def __init__(self, client: Any, *, namespace: str = "mcpcore", max_events: int = 512,
                 ttl_ms: int = 300_000, block_ms: int = 1000) -> None:
        self.r = client
        self.ns = namespace
        self.max_events = max_events
        self.ttl_ms = ttl_ms
        self.block_ms = block_ms

    def key(self, session_id: str) -> str:
        return events_key(self.ns, session_id)

    async def _add(self, session_id: str, fields: dict[str, Any]) -> str:
        key = self.key(session_id)
        min_id = f"{max(0, int(time.time() * 1000) - self.ttl_ms)}-0"
        async with self.r.pipeline(transaction=True) as pipe:
            pipe.xadd(key, fields, maxlen=self.max_events, approximate=False)
            pipe.xtrim(key, minid=min_id, approximate=True)
            pipe.pexpire(key, self.ttl_ms)
            res = await guarded(pipe.execute())
        entry = res[0]
        return entry.decode() if isinstance(entry, bytes) else str(entry)

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        return f"{stream_id}_{await self._add(session_id, {'s': stream_id, 'd': data})}"

    async def end(self, session_id: str, stream_id: str) -> None:
        await self._add(session_id, {"s": stream_id, "d": END, "e": 1})

    async def follow(self, session_id: str, stream_id: str,
                     after: str | None) -> AsyncGenerator[tuple[str, bytes], None]:
        key = self.key(session_id)
        last = "0-0"
        if after is not None:
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
        await guarded(self.r.delete(self.key(session_id)))


def _field(fields: dict[Any, Any], name: str) -> str | None:
    v = fields.get(name.encode(), fields.get(name))
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)
