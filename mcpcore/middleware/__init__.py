"""Middleware: layers around the methods a client calls (``McpApp(middleware=[...])``).

:class:`Middleware` is the base of your own; the package also ships the layers most servers
want: :class:`RateLimit` (per identity, tenant or tool; in memory or across instances in Redis)
and :class:`AccessLog` (one structured line per request).
"""

from .access_log import AccessLog
from .base import Call, CallNext, Middleware
from .ratelimit import RateLimit
from .windows import MemoryWindows, RedisWindows, Windows

__all__ = ["AccessLog", "Call", "CallNext", "MemoryWindows", "Middleware", "RateLimit", "RedisWindows", "Windows"]
