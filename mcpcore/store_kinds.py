"""The one registry of store kinds: each kind (``memory``, ``redis``, ``filesystem``, or your
own) registered once with what it builds.

A kind may build the ``ctx.state`` provider (chosen by ``STORAGE_PROVIDER_TYPE``) and the
session side of an app (chosen by ``MCP_SESSION_STORE``: sessions, the resumable event buffer,
the notification bus, stream slots and tasks, which live together). The settings name a kind;
:func:`store_kind` checks the name against this registry, so the list of kinds is written
nowhere else. mcpcore's own kinds are registered by :mod:`mcpcore.wiring`; register yours
before the app is built::

    register_store_kind(StoreKind("sqlite", state=lambda settings: SqliteStorage(settings.storage_path)))
    # STORAGE_PROVIDER_TYPE=sqlite
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .errors import ConfigurationError

if TYPE_CHECKING:
    from .bus.base import NotificationBus
    from .config import Settings
    from .sessions.base import SessionStore
    from .sessions.events import EventBuffer
    from .sessions.streams import StreamSlots
    from .storage.base import StorageProvider
    from .tasks.base import TaskStore

__all__ = ["SETTING", "SessionParts", "StoreKind", "register_store_kind", "store_kind", "store_kinds"]

Part = Literal["state", "sessions"]
SETTING: dict[Part, str] = {"state": "STORAGE_PROVIDER_TYPE", "sessions": "MCP_SESSION_STORE"}
"""The variable that chooses each part's kind."""


@dataclass(slots=True, eq=False)
class SessionParts:
    """What a kind builds for ``MCP_SESSION_STORE``: the stores that live together. ``redis`` is
    the client they share (the app closes it), ``None`` for a kind without one."""

    sessions: SessionStore
    events: EventBuffer | None
    bus: NotificationBus
    stream_slots: StreamSlots
    tasks: TaskStore
    redis: Any = None


@dataclass(frozen=True, slots=True)
class StoreKind:
    """A kind of store, as a setting names it.

    Args:
        name: what ``STORAGE_PROVIDER_TYPE`` or ``MCP_SESSION_STORE`` say to choose it.
        aliases: other names accepted for it.
        state: builds the ``ctx.state`` provider from the settings (``None``: not offered).
        sessions: builds the session side from the settings and a ``is_busy(session_id)`` check
            (whether this process serves the session now); ``None``: not offered.
        shared: every instance sees the same data (several processes may serve the app).
        redis: what it builds uses Redis (startup probes it, its problems name the setting).
    """

    name: str
    aliases: tuple[str, ...] = ()
    state: Callable[[Settings], StorageProvider] | None = None
    sessions: Callable[[Settings, Callable[[str], bool]], SessionParts] | None = None
    shared: bool = False
    redis: bool = False


_KINDS: dict[str, StoreKind] = {}
_NAMES: dict[str, str] = {}  # every name and alias -> the kind's name


def register_store_kind(kind: StoreKind) -> StoreKind:
    """Add ``kind`` to the registry (or replace the kind of that name).

    Raises:
        ConfigurationError: one of its names is another kind's.
    """
    for name in (kind.name, *kind.aliases):
        owner = _NAMES.get(name)
        if owner is not None and owner != kind.name:
            raise ConfigurationError(f"store kind name {name!r} is already kind {owner!r}'s")
    _KINDS[kind.name] = kind
    for name in (kind.name, *kind.aliases):
        _NAMES[name] = kind.name
    return kind


def store_kinds(part: Part) -> list[str]:
    """The names of the kinds that build ``part``, in registration order."""
    return [k.name for k in _KINDS.values() if getattr(k, part) is not None]


def store_kind(part: Part, name: str) -> StoreKind:
    """The kind ``name`` (or an alias of it) that builds ``part``.

    Raises:
        ConfigurationError: no such kind builds ``part``; the message names the variable and
            the kinds that do.
    """
    kind = _KINDS.get(_NAMES.get(name.strip().lower(), ""))
    if kind is None or getattr(kind, part) is None:
        raise ConfigurationError(f"{SETTING[part]} must be one of {', '.join(store_kinds(part))}; got {name!r}")
    return kind
