"""``Depends``: parameters the framework fills by calling a function, as in FastAPI.

A dependency is a function or a class, sync or async, or a generator (sync or async) whose code
after ``yield`` runs once the handler is done, also when it failed or was cancelled. It may
take a ``Context`` and other dependencies. Its graph is read once, when the definition is made;
a parameter it cannot fill is a :class:`~mcpcore.ConfigurationError` then, never at call time.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from ..errors import ConfigurationError
from .common import is_context_annotation, type_hints

__all__ = ["Dependency", "DependencyOverrides", "Depends", "dependency_of", "plan_dependency"]

Kind = Literal["async", "sync", "asyncgen", "gen"]


class Depends:
    """Mark a parameter as filled by ``dependency`` (never part of the input schema)::

        async def get_db(ctx: Context) -> AsyncIterator[Db]:
            async with ctx.app_state.pool.acquire() as db:
                yield db

        @tool
        async def count_notes(db: Annotated[Db, Depends(get_db)]) -> int: ...

    Args:
        dependency: the function or class to call; omitted (``Annotated[Db, Depends()]``), the
            parameter's annotated class itself.
        use_cache: one value per request for this dependency, however many parameters and
            dependencies ask for it (``False``: a fresh call for each).
    """

    __slots__ = ("dependency", "use_cache")

    def __init__(self, dependency: Callable[..., Any] | None = None, *, use_cache: bool = True) -> None:
        if dependency is not None and not callable(dependency):
            raise TypeError(f"Depends() takes a function or a class, got {dependency!r}")
        self.dependency = dependency
        self.use_cache = use_cache

    def __repr__(self) -> str:
        name = getattr(self.dependency, "__qualname__", None) if self.dependency is not None else None
        return f"Depends({name or ''})"


@dataclass(frozen=True, slots=True, eq=False)
class Dependency:
    """One dependency of a definition, analysed: how to call it and what it needs."""

    call: Callable[..., Any]
    kind: Kind
    ctx_param: str | None
    subs: tuple[tuple[str, Dependency], ...]
    use_cache: bool

    @property
    def name(self) -> str:
        """The dependency's name, for messages."""
        return str(getattr(self.call, "__qualname__", None) or repr(self.call))



def dependency_of(annotation: Any, default: Any) -> Depends | None:
    """The :class:`Depends` of a parameter: in ``Annotated[T, Depends(...)]`` or as its default."""
    if isinstance(default, Depends):
        return default
    if get_origin(annotation) is typing.Annotated:
        for extra in get_args(annotation)[1:]:
            if isinstance(extra, Depends):
                return extra
    return None


def _target(marker: Depends, annotation: Any, owner: str, param: str) -> Callable[..., Any]:
    if marker.dependency is not None:
        return marker.dependency
    base = get_args(annotation)[0] if get_origin(annotation) is typing.Annotated else annotation
    if isinstance(base, type):
        return base
    raise ConfigurationError(f"{owner}: parameter {param!r} has Depends() without a dependency and no class "
                             "annotation to call; write Depends(function)")


def _kind(fn: Callable[..., Any]) -> Kind:
    target = inspect.unwrap(fn)
    call = target if inspect.isfunction(target) or inspect.ismethod(target) or isinstance(target, type) else \
        getattr(target, "__call__", target)  # noqa: B004
    if inspect.isasyncgenfunction(call):
        return "asyncgen"
    if inspect.isgeneratorfunction(call):
        return "gen"
    if inspect.iscoroutinefunction(call):
        return "async"
    return "sync"


def plan_dependency(marker: Depends, annotation: Any, owner: str, param: str,
                    localns: dict[str, Any] | None = None, _seen: tuple[Any, ...] = ()) -> Dependency:
    """Analyse the dependency of ``param`` (and everything under it) once.

    Raises:
        ConfigurationError: a parameter of a dependency is neither a ``Context``, a dependency
            nor defaulted; the graph has a cycle; the dependency has no inspectable signature.
    """
    fn = _target(marker, annotation, owner, param)
    if fn in _seen:
        chain = " -> ".join(getattr(f, "__qualname__", repr(f)) for f in (*_seen, fn))
        raise ConfigurationError(f"{owner}: dependencies form a cycle: {chain}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{owner}: cannot read the signature of dependency {fn!r}: {exc}") from exc
    hints = type_hints(getattr(fn, "__init__") if isinstance(fn, type) else fn, localns)  # noqa: B009
    name = getattr(fn, "__qualname__", repr(fn))
    ctx_param: str | None = None
    subs: list[tuple[str, Dependency]] = []
    for p in sig.parameters.values():
        ann = hints.get(p.name, p.annotation)
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        sub = None if is_context_annotation(ann) else dependency_of(ann, p.default)
        if p.kind is inspect.Parameter.POSITIONAL_ONLY and (sub is not None or is_context_annotation(ann)):
            raise ConfigurationError(f"{owner}: dependency {name} takes {p.name!r} positional-only; make it a "
                                     "keyword parameter")
        if is_context_annotation(ann):
            ctx_param = p.name
        elif sub is not None:
            subs.append((p.name, plan_dependency(sub, ann, owner, p.name, localns, (*_seen, fn))))
        elif p.default is inspect.Parameter.empty:
            raise ConfigurationError(f"{owner}: parameter {p.name!r} of dependency {name} is not a Context, not a "
                                     "Depends(...) and has no default, so nothing can fill it")
    return Dependency(fn, _kind(fn), ctx_param, tuple(subs), marker.use_cache)


class DependencyOverrides(dict[Callable[..., Any], Dependency]):
    """``app.dependency_overrides``: ``{original: replacement}``, as in FastAPI (tests swap a
    database for a fake). Each replacement is analysed when it is set."""

    def __setitem__(self, original: Callable[..., Any], replacement: Callable[..., Any] | Dependency) -> None:
        dep = replacement if isinstance(replacement, Dependency) else plan_dependency(
            Depends(replacement), None, "dependency_overrides", getattr(original, "__qualname__", "dependency"))
        super().__setitem__(original, dep)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for original, replacement in dict(*args, **kwargs).items():
            self[original] = replacement
