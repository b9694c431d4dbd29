"""``@prompt``: a function that renders prompt messages from string arguments."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from ..content import PromptMessage, to_wire
from ..errors import ConfigurationError, ErrorContract
from .checks import check_options, prompt_argument_mistakes, raise_first
from .common import (
    Visibility,
    VisibilityRule,
    attach,
    caller_locals,
    check_name,
    description_of,
    is_async,
    make_caller,
    visibility_rule,
)
from .schema import ArgsPlan, args_plan

__all__ = ["PromptDefinition", "prompt"]

F = TypeVar("F", bound=Callable[..., Any])
PROMPT_ATTR = "__mcpcore_prompt__"


@dataclass(eq=False, slots=True)
class PromptDefinition:
    """A prompt, computed once."""

    name: str
    description: str
    fn: Callable[..., Any]
    args: ArgsPlan
    call: Callable[[dict[str, Any]], Any]
    arguments: list[dict[str, Any]]
    title: str | None = None
    complete: dict[str, Callable[..., Any]] = field(default_factory=dict)
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    errors: tuple[ErrorContract, ...] = ()
    """Declared failures: none for prompts (the field keeps every invocable definition alike)."""
    auth: tuple[str, ...] = ()
    """Required scopes: none for prompts (as in the reference framework)."""
    visible_to: VisibilityRule = None
    """Who sees and may get the prompt (``None``: every caller)."""
    direct: Callable[..., Any] | None = None
    """The function itself when it is a coroutine function (called without the thread hop)."""
    forward: Callable[[dict[str, Any], Any], Awaitable[dict[str, Any]]] | None = None
    """Served elsewhere (a proxied backend): the request's ``params`` and ``Inbound`` are handed over whole."""
    pipeline: Any = field(default=None, init=False, repr=False)
    """How it is invoked (``mcpcore.server.invoke.Pipeline``): built on its first call, kept."""

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        out["description"] = self.description
        if self.arguments:
            out["arguments"] = self.arguments
        if self.icons:
            out["icons"] = self.icons
        if self.meta:
            out["_meta"] = self.meta
        return out

    @staticmethod
    def messages(value: Any) -> list[dict[str, Any]]:
        """Turn a prompt function's return value into ``messages[]``."""
        if isinstance(value, str):
            return [{"role": "user", "content": {"type": "text", "text": value}}]
        if isinstance(value, (PromptMessage, dict)):
            value = [value]
        out: list[dict[str, Any]] = []
        for m in value:
            if isinstance(m, str):
                out.append({"role": "user", "content": {"type": "text", "text": m}})
            elif isinstance(m, PromptMessage):
                out.append(to_wire(m))
            elif isinstance(m, dict):
                out.append(to_wire(PromptMessage.model_validate(m)))
            else:
                raise TypeError(f"a prompt must return str, PromptMessage, dict or a list of them; got {type(m)}")
        return out


def build_prompt(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Mapping[str, Callable[..., Any]] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: Mapping[str, Any] | None = None,
    visible_to: Visibility | None = None,
    localns: dict[str, Any] | None = None,
) -> PromptDefinition:
    prompt_name = check_name("prompt", name if name is not None else fn.__name__)
    owner = f"prompt {prompt_name!r}"
    desc = description_of("prompt", prompt_name, description, fn)
    plan = args_plan(fn, owner, model_name=f"{prompt_name.replace('.', '_').replace('-', '_')}_args",
                     localns=localns if localns is not None else caller_locals(), kind="prompt")
    raise_first(owner, prompt_argument_mistakes(plan.model), "argument")
    arguments: list[dict[str, Any]] = []
    for fname, f in plan.model.model_fields.items():
        entry: dict[str, Any] = {"name": f.alias or fname}
        if f.title:
            entry["title"] = f.title
        if f.description:
            entry["description"] = f.description
        entry["required"] = f.is_required()
        arguments.append(entry)
    keys = {a["name"] for a in arguments}
    for arg, fn_c in (complete or {}).items():
        if arg not in keys:
            raise ConfigurationError(f"{owner}: completion for unknown argument {arg!r}")
        if not callable(fn_c):
            raise ConfigurationError(f"{owner}: completion for {arg!r} must be callable")
    return PromptDefinition(
        name=prompt_name,
        description=desc,
        fn=fn,
        args=plan,
        call=make_caller(fn),
        direct=fn if is_async(fn) else None,
        arguments=arguments,
        title=title,
        complete=dict(complete or {}),
        icons=icons,
        meta=dict(meta) if meta else None,
        visible_to=visibility_rule(owner, visible_to),
    )


@overload
def prompt(fn: F, /) -> F: ...
@overload
def prompt(
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Mapping[str, Callable[..., Any]] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: Mapping[str, Any] | None = None,
    visible_to: Visibility | None = None,
) -> Callable[[F], F]: ...
def prompt(fn: Any = None, /, **options: Any) -> Any:
    """Declare a prompt. Its parameters are the prompt's arguments (strings on the wire);
    it returns ``str`` (one user message), a :class:`PromptMessage`, a dict, or a list of them.

    Args:
        name, title, description: as for tools (a description or docstring is required).
        complete: ``{argument: fn(value, arguments) -> list[str]}`` for ``completion/complete``.
        visible_to: who sees the prompt (scopes, or a function of the ``Context``), as for tools.
    """
    def decorate(f: Any) -> Any:
        if not callable(f):
            raise TypeError("@prompt decorates a function")
        check_options("prompt", options.get("name") or getattr(f, "__name__", "?"), options, PROMPT_OPTIONS)
        return attach(f, PROMPT_ATTR, build_prompt(f, **options))

    if fn is not None:
        if options:
            raise TypeError("use @prompt or @prompt(...)")
        if isinstance(fn, str):
            raise TypeError(f"@prompt takes options by keyword: @prompt(name={fn!r})")
        return decorate(fn)
    return decorate


PROMPT_OPTIONS = frozenset(inspect.signature(build_prompt).parameters) - {"fn", "localns"}
"""The options ``@prompt(...)`` takes."""
