"""The wired parts of a running app, shared by its transports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .auth.base import Authenticator
    from .bus.base import NotificationBus
    from .config import Settings
    from .context import ContextServices
    from .server.dispatcher import Dispatcher
    from .sessions.base import SessionStore
    from .sessions.streams import StreamSlots
    from .transports.live import LiveSessions

__all__ = ["Runtime"]


@dataclass(slots=True, eq=False)
class Runtime:
    """Everything a transport needs to serve requests."""

    dispatcher: Dispatcher
    services: ContextServices
    bus: NotificationBus
    sessions: SessionStore
    live: LiveSessions
    session_mode: str
    auth: Authenticator | None = None
    shared: bool = False
    expose_stateless_session_id: bool = False
    stream_slots: StreamSlots | None = None

    @property
    def settings(self) -> Settings:
        """The app's settings (its server core's)."""
        return self.dispatcher.core.settings
