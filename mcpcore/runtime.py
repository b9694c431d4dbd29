"""The wired parts of a running app, shared by its transports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .auth.base import Authenticator
    from .bus.base import NotificationBus
    from .config import Settings
    from .context import ContextServices
    from .server.dispatcher import Dispatcher
    from .server.notify import Notifier
    from .sessions.base import SessionStore
    from .sessions.events import EventBuffer
    from .sessions.streams import StreamSlots
    from .transports.live import LiveSessions

__all__ = ["Runtime"]


@dataclass(slots=True, eq=False)
class Runtime:
    """Everything a transport needs to serve requests."""

    settings: Settings
    dispatcher: Dispatcher
    services: ContextServices
    notifier: Notifier
    bus: NotificationBus
    sessions: SessionStore
    live: LiveSessions
    session_mode: str
    server_info: dict[str, Any]
    auth: Authenticator | None = None
    events: EventBuffer | None = None
    shared: bool = False
    expose_stateless_session_id: bool = False
    stream_slots: StreamSlots | None = None
