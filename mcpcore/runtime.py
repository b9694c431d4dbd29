"""The wired parts of a running app, shared by its transports: one :class:`Runtime` per app,
built with the app; its HTTP endpoint and its HTTP+SSE endpoint take that one, stdio a copy
(:meth:`Runtime.stdio`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
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
    """Everything a transport needs to serve requests (``session_mode``: set when the app starts
    for HTTP, since resolving it may fail and must fail when the app is served, not built)."""

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

    def stdio(self) -> Runtime:
        """This runtime as stdio serves it. The part that differs stays per transport: a stdio
        server is one process with one caller, the process that spawned it, so it has one stateful
        session of its own (no session mode to resolve, nothing shared with other instances, no
        stream slots), and no door (no bearer token crosses a pipe: no authenticator)."""
        return replace(self, session_mode="stateful", shared=False, auth=None, stream_slots=None,
                       expose_stateless_session_id=False)
