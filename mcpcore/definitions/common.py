"""What tool, resource and prompt definitions share: names, descriptions, sync/async calls."""

from __future__ import annotations

import functools
import inspect
import re
import sys
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, get_args, get_origin

import anyio.to_thread

from ..context import Context
from ..errors import ConfigurationError

__all__ = ["NAME_RE", "SeenWithAny", "Visibility", "VisibilityRule", "attach", "caller_locals", "check_name",
           "description_of", "is_async", "is_context_annotation", "make_caller", "type_hints", "visibility_rule"]

NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")

Visibility = Sequence[str] | Callable[[Context], bool]
"""Who sees a definition (``visible_to=``): the OAuth scopes a caller must all hold, or a
predicate on the caller's ``Context``."""


class SeenWithAny:
    """The visibility of what serves several gated definitions (an MCP App view shared by
    tools): a caller sees it when it sees any of ``owners``."""

    __slots__ = ("owners",)

    def __init__(self, owners: Sequence[Any]) -> None:
        self.owners = tuple(owners)

    def __repr__(self) -> str:
        return f"SeenWithAny({[getattr(o, 'name', o) for o in self.owners]!r})"


VisibilityRule = tuple[str, ...] | Callable[[Context], bool] | SeenWithAny | None
"""A definition's visibility as stored: scopes, a predicate, the visibility of the definitions
it serves (:class:`SeenWithAny`), or ``None`` (everyone)."""


def visibility_rule(owner: str, value: Visibility | None) -> VisibilityRule:
    """Check and normalise ``visible_to=``."""
    if value is None:
        return None
    if callable(value):
        return value
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigurationError(f"{owner}: visible_to= takes a list of scopes or a function of the Context, "
                                 f"got {value!r}")
    scopes = tuple(value)
    for scope in scopes:
        if not isinstance(scope, str) or not scope or any(c.isspace() for c in scope):
            raise ConfigurationError(f"{owner}: visible_to scope {scope!r} must be a non-empty string without spaces")
    return scopes or None


def attach(fn: Any, attr: str, definition: Any) -> Any:
    """Put ``definition`` on ``fn`` and return what carries it: ``fn`` itself, or for a bound
    method (which takes no attributes) a callable standing for it."""
    if inspect.ismethod(fn):
        carrier = functools.partial(fn)
        functools.update_wrapper(carrier, fn)
        fn = carrier
    setattr(fn, attr, definition)
    return fn


def caller_locals(depth: int = 2) -> dict[str, Any] | None:
    """The local names of the scope that applied a decorator, so annotations naming classes
    defined in a function body (``from __future__ import annotations``) still resolve."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return None
    while frame is not None and _internal(frame.f_globals.get("__name__", "")):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None or frame.f_locals is frame.f_globals:
        return None
    return dict(frame.f_locals)


def _internal(module: str) -> bool:
    return module == "mcpcore" or (module.startswith("mcpcore.") and not module.startswith("mcpcore.testing"))


def check_name(kind: str, name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ConfigurationError(
            f"{kind} name {name!r} is invalid: use 1-128 characters from letters, digits, '_', '-' and '.'"
        )
    return name


def description_of(kind: str, name: str, explicit: str | None, fn: Callable[..., Any] | None) -> str:
    if explicit is not None:
        text = explicit.strip()
    else:
        doc = inspect.getdoc(fn) if fn is not None else None
        text = (doc or "").strip()
    if not text:
        raise ConfigurationError(
            f"{kind} {name!r} has no description: pass description= or write a docstring "
            "(clients show it to the model, and several refuse definitions without one)"
        )
    return text


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine (functions, wrapped functions, async ``__call__``)."""
    target = inspect.unwrap(fn)
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None))  # noqa: B004


def make_caller(fn: Callable[..., Any]) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """An async caller for ``fn``: awaited when async, run in a worker thread when sync."""
    if is_async(fn):
        async def call_async(kwargs: dict[str, Any]) -> Any:
            return await fn(**kwargs)

        return call_async

    async def call_sync(kwargs: dict[str, Any]) -> Any:
        result = await anyio.to_thread.run_sync(functools.partial(fn, **kwargs))
        if inspect.isawaitable(result):
            result = await result
        return result

    return call_sync


def type_hints(fn: Callable[..., Any], localns: dict[str, Any] | None = None) -> dict[str, Any]:
    """Resolved annotations of ``fn``; names local to the defining scope resolve through ``localns``."""
    try:
        return typing.get_type_hints(fn, localns=localns, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        return dict(getattr(fn, "__annotations__", {}))


def is_context_annotation(ann: Any) -> bool:
    """Whether a parameter annotated ``ann`` receives the request's ``Context``."""
    if ann is inspect.Parameter.empty:
        return False
    if isinstance(ann, str):
        return ann.split(".")[-1].split("[")[0] == "Context"
    if get_origin(ann) is typing.Annotated:
        ann = get_args(ann)[0]
    return isinstance(ann, type) and issubclass(ann, Context)
