"""The notification bus: list-changed and resource-updated events, fanned out to every
2025 GET stream and 2026 listen stream (in-process here; over Redis pub/sub when shared)."""

from .base import BusEvent, NotificationBus
from .memory import LocalBus

__all__ = ["BusEvent", "LocalBus", "NotificationBus"]
