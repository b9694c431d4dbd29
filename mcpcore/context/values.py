"""What layers put on a request for the code after them, and what the host app established.

- :class:`Values` (``ctx.values``): typed values a middleware layer or a dependency sets for the
  handlers and dependencies that run after it, keyed by a class (``ctx.values[User]``) or by a
  :class:`Key` (``ctx.values[TRACE_TAG]``). They live as long as the request, across input rounds.
- :class:`HttpInfo` (``ctx.http``): the HTTP request as the ASGI server and the host app's own
  middleware left it (headers, client address, ``scope["state"]``), when mcpcore serves over HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar, overload

from ..asgi_types import Scope

__all__ = ["HostState", "HttpInfo", "Key", "Values"]

T = TypeVar("T")
D = TypeVar("D")


class Key(Generic[T]):
    """A named slot for a request value of type ``T``, for values whose class alone is not a good
    key (a plain ``str``, two values of one class)::

        TRACE_TAG = Key[str]("trace_tag")
        ctx.values[TRACE_TAG] = "blue"
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Key({self.name!r})"


def _name(key: object) -> str:
    return key.name if isinstance(key, Key) else getattr(key, "__qualname__", repr(key))


class Values:
    """The typed values of one request: ``ctx.values[User] = user`` in a layer, then
    ``ctx.values[User]`` (typed ``User``) in a handler or a dependency."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[object, Any]) -> None:
        self._data = data

    def __getitem__(self, key: type[T] | Key[T]) -> T:
        try:
            value: T = self._data[key]
        except KeyError:
            raise LookupError(f"no value for {_name(key)} on this request (a middleware layer or a dependency "
                              "sets it with ctx.values[...] = ...)") from None
        return value

    def __setitem__(self, key: type[T] | Key[T], value: T) -> None:
        if isinstance(key, type) and not isinstance(value, key):
            raise TypeError(f"ctx.values[{key.__qualname__}] takes a {key.__qualname__}, got {type(value).__name__}")
        if not isinstance(key, (type, Key)):
            raise TypeError("ctx.values keys are classes or mcpcore.Key objects")
        self._data[key] = value

    def __delitem__(self, key: type[Any] | Key[Any]) -> None:
        self._data.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[object]:
        return iter(self._data)

    @overload
    def get(self, key: type[T] | Key[T]) -> T | None: ...
    @overload
    def get(self, key: type[T] | Key[T], default: D) -> T | D: ...
    def get(self, key: type[T] | Key[T], default: Any = None) -> Any:
        """The value, or ``default`` when no layer set one."""
        return self._data.get(key, default)

    def __repr__(self) -> str:
        return f"Values({', '.join(_name(k) for k in self._data)})"


class HostState:
    """Attribute access to the ASGI ``scope["state"]`` a host app's middleware wrote (what
    Starlette and FastAPI show as ``request.state``): ``ctx.http.state.user``."""

    __slots__ = ("_state",)

    def __init__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "_state", state)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._state[name]
        except KeyError:
            raise AttributeError(f"the host app set no {name!r} on the request state") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._state[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self._state

    def get(self, name: str, default: Any = None) -> Any:
        """The value the host set under ``name``, or ``default``."""
        return self._state.get(name, default)

    def __repr__(self) -> str:
        return f"HostState({sorted(self._state)!r})"


class HttpInfo:
    """The HTTP request a message arrived on (``ctx.http``; ``None`` over stdio).

    ``headers`` are decoded (latin-1) with lower-cased names; a repeated header's values are
    joined with ``", "``. When mcpcore is mounted in a host app, ``state`` holds what the host's
    middleware put on ``request.state``.
    """

    __slots__ = ("_headers", "scope")

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        """The raw ASGI scope (read it; changing it changes nothing for this request)."""
        self._headers: dict[str, str] | None = None

    @property
    def headers(self) -> Mapping[str, str]:
        """The request's headers, lower-cased names."""
        if self._headers is None:
            out: dict[str, str] = {}
            for k, v in self.scope.get("headers", ()):
                name = k.decode("latin-1").lower()
                value = v.decode("latin-1")
                out[name] = f"{out[name]}, {value}" if name in out else value
            self._headers = out
        return self._headers

    @property
    def client(self) -> tuple[str, int] | None:
        """The peer's ``(host, port)`` as the ASGI server (or a proxy-headers middleware) saw it."""
        client = self.scope.get("client")
        return (str(client[0]), int(client[1])) if client else None

    @property
    def state(self) -> HostState:
        """What the host app's middleware stored on the request (``request.state`` in Starlette)."""
        return HostState(self.scope.setdefault("state", {}))

    @property
    def path(self) -> str:
        """The request's path, as the ASGI server gave it."""
        return str(self.scope.get("path", ""))

    def __repr__(self) -> str:
        return f"HttpInfo(path={self.path!r}, client={self.client!r})"
