"""Signature mistakes that would otherwise pass silently, found once when a definition is made.

A method decorated in its class body, another framework's ``Depends``/``Query`` as a default, an
unannotated parameter or ``ctx``, an HTTP framework object as an input, a prompt argument a
client cannot send as a string: each would build a definition that serves, then misbehaves at
call time. The decorators raise the first one as a :class:`~mcpcore.ConfigurationError`;
``mcpcore lint`` reports all of them for definitions built some other way.
"""

from __future__ import annotations

import difflib
import inspect
import types
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict, create_model

from ..errors import ConfigurationError
from ..jsonschema import json_schema
from .common import is_context_annotation
from .depends import Depends

__all__ = ["Mistake", "check_options", "input_type_error", "prompt_argument_mistakes", "raise_first",
           "signature_mistakes"]

# Packages whose parameter markers (``fastapi.Depends``, ``fastapi.Query``, ...) mean something only
# to their own framework, recognised by the module of the marker's type (none of them is imported).
_FOREIGN_MARKERS = frozenset({"fastapi", "fast_depends", "faststream", "litestar", "typer", "ninja",
                              "dependency_injector", "fastmcp", "docket"})
_INJECTING = frozenset({"Depends", "Security", "Provide", "Inject", "Dependency", "Provider"})
_HTTP_FRAMEWORKS = frozenset({"starlette", "fastapi"})
_HTTP_OBJECTS = frozenset({"HTTPConnection", "Request", "WebSocket"})
_FOREIGN_CONTEXTS = frozenset({"fastmcp", "mcp"})
_CTX_NAMES = frozenset({"ctx", "context"})


@dataclass(frozen=True, slots=True)
class Mistake:
    """One parameter that cannot work as written: what is wrong and how to fix it."""

    param: str
    problem: str
    fix: str

    def line(self, owner: str, what: str = "parameter") -> str:
        """``<owner>: <what> '<param>' <problem>; <fix>`` (one line)."""
        return f"{owner}: {what} {self.param!r} {self.problem}; {self.fix}"


def raise_first(owner: str, mistakes: list[Mistake], what: str = "parameter") -> None:
    """Raise the first mistake as a :class:`ConfigurationError` (nothing when there is none)."""
    if mistakes:
        raise ConfigurationError(mistakes[0].line(owner, what))


def _root(obj: Any) -> str:
    return str(getattr(obj, "__module__", "") or "").split(".")[0]


def _bare(ann: Any) -> list[Any]:
    """``ann`` without ``Annotated``, ``Optional`` and unions: the types it may be."""
    if get_origin(ann) is typing.Annotated:
        return _bare(get_args(ann)[0])
    if get_origin(ann) is typing.Union or isinstance(ann, types.UnionType):
        return [t for a in get_args(ann) for t in _bare(a) if t is not type(None)]
    return [ann]


def _in_class_body(fn: Callable[..., Any]) -> bool:
    parts = str(getattr(fn, "__qualname__", "")).split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def _marker(ann: Any, default: Any) -> Any:
    if _root(type(default)) in _FOREIGN_MARKERS:
        return default
    if get_origin(ann) is typing.Annotated:
        for extra in get_args(ann)[1:]:
            if not isinstance(extra, Depends) and _root(type(extra)) in _FOREIGN_MARKERS:
                return extra
    return None


def _method_mistake(fn: Callable[..., Any], name: str, kind: str) -> Mistake:
    method = getattr(fn, "__name__", "method")
    bound = f"{'Cls' if name == 'cls' else 'obj'}.{method}"
    register = f'{kind}("uri")({bound})' if kind == "resource" else f"{kind}({bound})"
    return Mistake(name, "is the first parameter of a method decorated in its class body, so the client would "
                   "be asked for it as a required input", "decorate a module-level function, or register the bound "
                   f"method once it exists: {register}")


def _foreign_marker(marker: Any) -> tuple[str, str]:
    kind = type(marker).__name__
    origin = f"{_root(type(marker))}.{kind}"
    if kind in _INJECTING:
        return (f"is marked {origin}, which mcpcore does not run (the handler would get the marker itself as an "
                "input value)", "use mcpcore's own: Annotated[T, mcpcore.Depends(provider)]")
    return (f"is marked {origin}, a parameter marker of another framework that mcpcore does not read",
            "write the default itself and describe the input with pydantic: Annotated[T, Field(description=...)] "
            "= default")


def _http_object(ann: Any) -> type | None:
    for t in _bare(ann):
        if isinstance(t, type) and _root(t) in _HTTP_FRAMEWORKS:
            return t
    return None


def signature_mistakes(fn: Callable[..., Any], hints: Mapping[str, Any], *, kind: str = "tool") -> list[Mistake]:
    """Every parameter of ``fn`` that cannot work as a ``kind``'s input or injected value."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    found: list[Mistake] = []
    for i, p in enumerate(params):
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        ann = hints.get(p.name, p.annotation)
        empty = ann is inspect.Parameter.empty
        if i == 0 and p.name in ("self", "cls") and (empty or _in_class_body(fn)):
            found.append(_method_mistake(fn, p.name, kind))
            continue
        if is_context_annotation(ann) or isinstance(p.default, Depends) or (
                get_origin(ann) is typing.Annotated and any(isinstance(x, Depends) for x in get_args(ann)[1:])):
            continue
        marker = _marker(ann, p.default)
        if marker is not None:
            found.append(Mistake(p.name, *_foreign_marker(marker)))
            continue
        if empty:
            if p.name in _CTX_NAMES:
                found.append(Mistake(p.name, "has no annotation, so it would be an input the client fills instead "
                                     "of the request's Context", f"annotate it: {p.name}: Context (from mcpcore "
                                     "import Context)"))
            else:
                example = f"{p.name}: str" if kind != "tool" else f"{p.name}: str, or {p.name}: Any to accept " \
                    "any JSON value"
                found.append(Mistake(p.name, "has no type annotation, so clients get no type for it and any value "
                                     "they send passes through", f"annotate it ({example})"))
            continue
        for t in _bare(ann):
            if isinstance(t, type) and t.__name__ == "Context" and _root(t) in _FOREIGN_CONTEXTS:
                found.append(Mistake(p.name, f"is annotated {t.__module__}.Context, another framework's context, "
                                     "which mcpcore does not fill", "import Context from mcpcore instead"))
                break
        else:
            http = _http_object(ann)
            if http is not None:
                found.append(_http_mistake(p.name, http))
    return found


def _http_mistake(name: str, http: type) -> Mistake:
    qual = f"{http.__module__}.{http.__qualname__}"
    if any(c.__name__ in _HTTP_OBJECTS for c in http.__mro__):
        return Mistake(name, f"is a {qual}, which mcpcore does not inject (a call is not an HTTP request: it may "
                       "come over stdio, or batched)", "remove it and read the request through the Context: "
                       "ctx.http.headers, ctx.http.client, ctx.http.state (ctx.http is None over stdio)")
    return Mistake(name, f"is a {qual}, an object of the HTTP framework that a client cannot send and mcpcore "
                   "does not inject", "take JSON values as inputs and reach HTTP details through ctx.http")


def _scalar(schema: Any, defs: Mapping[str, Any]) -> bool:
    """Whether a JSON Schema admits only what a string can carry (string, number, boolean, enum)."""
    if not isinstance(schema, Mapping):
        return False
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _scalar(defs.get(ref.rsplit("/", 1)[-1]), defs)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return all(_scalar(b, defs) for b in branches)
    t = schema.get("type")
    types_ = [t] if isinstance(t, str) else t if isinstance(t, list) else None
    if types_ is None:
        return "enum" in schema or "const" in schema
    return all(x in ("string", "integer", "number", "boolean", "null") for x in types_)


def prompt_argument_mistakes(model: type[BaseModel]) -> list[Mistake]:
    """Arguments of a prompt's model that a client cannot send: prompt arguments are strings."""
    schema = json_schema(model)
    defs = schema.get("$defs") or {}
    found: list[Mistake] = []
    for key, prop in (schema.get("properties") or {}).items():
        if not _scalar(prop, defs):
            ann = next((f.annotation for n, f in model.model_fields.items() if (f.alias or n) == key), None)
            shown = getattr(ann, "__name__", None) if isinstance(ann, type) else None
            found.append(Mistake(key, f"is {shown or repr(ann)}, which a prompt cannot take: clients send prompt "
                                 "arguments as strings (prompts/get has {name: string}), so it is listed as a "
                                 "string no value can fill", "take a str (for structured input, JSON text the "
                                 "prompt parses, or one string argument per field)"))
    return found


def input_type_error(owner: str, fields: Mapping[str, tuple[Any, Any]], config: ConfigDict | None,
                     exc: Exception, *, prefix: str = "") -> ConfigurationError:
    """The error for an input model pydantic cannot build or describe: the first parameter
    (``prefix`` + field) that fails on its own, named with the owner, and pydantic's reason."""
    for name, spec in fields.items():
        one: dict[str, Any] = {name: spec}
        try:
            json_schema(create_model("probe", __config__=config, **one))
        except Exception as own:
            return ConfigurationError(f"{owner}: parameter {prefix + name!r} has a type that cannot be an input "
                                      f"({_first_sentence(own)}); use JSON types (str, int, float, bool, lists, "
                                      "dicts, pydantic models) and reach anything else through Depends or the Context")
    return ConfigurationError(f"{owner}: cannot build an input schema from its parameters: {_first_sentence(exc)}")


def _first_sentence(exc: Exception) -> str:
    """Pydantic's reason without its advice (``arbitrary_types_allowed`` would not make the type JSON)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.split(". ", 1)[0].rstrip(".")


def check_options(kind: str, name: object, given: Mapping[str, Any], allowed: Collection[str],
                  annotations: Collection[str] = ()) -> None:
    """Refuse decorator options ``kind`` does not take, naming the closest valid one (or, for a
    behaviour hint passed as an option, the ``annotations=`` it belongs in)."""
    for option, value in given.items():
        if option not in allowed:
            close = difflib.get_close_matches(option, list(allowed), n=1)
            if option in annotations:
                hint = f"did you mean annotations={{{option!r}: {value!r}}}? "
            else:
                hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigurationError(f"{kind} {str(name)!r}: unknown option {option!r}; {hint}"
                                     f"@{kind} takes {', '.join(sorted(allowed))}")
