"""A shutdown flag that long-lived handlers (listen streams, GET streams) can wait on."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Closing"]


class Closing:
    """Set once at shutdown; listeners run then (at once when already set)."""

    def __init__(self) -> None:
        self.is_set = False
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, fn: Callable[[], None]) -> Callable[[], None]:
        if self.is_set:
            fn()
            return lambda: None
        self._listeners.append(fn)

        def remove() -> None:
            if fn in self._listeners:
                self._listeners.remove(fn)

        return remove

    def set(self) -> None:
        if self.is_set:
            return
        self.is_set = True
        for fn in list(self._listeners):
            fn()
        self._listeners.clear()

    def reset(self) -> None:
        self.is_set = False
