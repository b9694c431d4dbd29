"""``module:attribute`` targets of ``mcpcore run`` and ``mcpcore lint``: imported, or refused in
one line that says what is wrong and how to fix it (a misspelled module or attribute, a tool
where the app was meant, a factory that was never called)."""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import pkgutil
import sys
import traceback
import types
from typing import Any

from .definitions.prompts import PROMPT_ATTR, PromptDefinition
from .definitions.resources import RESOURCE_ATTR, ResourceDefinition
from .definitions.tools import TOOL_ATTR, ToolDefinition
from .errors import ConfigurationError
from .serving import Servable

__all__ = ["check_servable", "load_app"]

_APP_FRAMEWORKS = frozenset({"starlette", "fastapi", "litestar", "quart", "django", "falcon", "sanic"})


def load_app(target: str) -> Any:
    """Import ``module:attribute`` (the attribute defaults to ``app``) from the current directory
    or ``sys.path``.

    Raises:
        ConfigurationError: the target is malformed, or its module or attribute does not exist
            (the message names the closest existing one).
    """
    module_name, _, attr = target.partition(":")
    if not module_name or module_name.startswith(".") or (attr and not all(attr.split("."))):
        raise ConfigurationError(f"expected module:app (e.g. server:app), got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigurationError(_missing_module(target, module_name, exc)) from None
    obj: Any = module
    path = attr or "app"
    for i, part in enumerate(path.split(".")):
        found = getattr(obj, part, None)
        if found is None:
            owner = ".".join([module_name, *path.split(".")[:i]])
            raise ConfigurationError(f"{target!r}: {owner} has no attribute {part!r}{_suggest_app(obj, part, owner)}")
        obj = found
    return obj


def _missing_module(target: str, module_name: str, exc: ModuleNotFoundError) -> str:
    missing = exc.name or module_name
    if missing == module_name or module_name.startswith(missing + "."):
        parent, _, leaf = missing.rpartition(".")
        close = difflib.get_close_matches(leaf, _modules_in(parent), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        where = f"package {parent!r}" if parent else f"the current directory ({os.getcwd()}) or sys.path"
        return (f"{target!r}: no module named {missing!r} in {where}; {hint}check the spelling, or run mcpcore from "
                "the directory that holds the module")
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<frozen")]
    at = f" ({os.path.relpath(frames[-1].filename)} line {frames[-1].lineno})" if frames else ""
    return (f"{target!r}: importing {module_name} needs the module {missing!r}, which is not installed{at}; "
            f"install the package that provides it in this environment ({sys.executable})")


def _modules_in(package: str) -> list[str]:
    if package:
        try:
            paths = list(getattr(importlib.import_module(package), "__path__", []))
        except ImportError:
            return []
    else:
        paths = [os.getcwd()]
    return [m.name for m in pkgutil.iter_modules(paths)]


def _apps_in(namespace: Any) -> list[str]:
    """Names in ``namespace`` that hold an app instance (an McpApp, a Starlette/FastAPI app, ...)."""
    return [name for name, value in vars(namespace).items() if not name.startswith("_") and _is_app_instance(value)]


def _is_app_instance(value: Any) -> bool:
    if isinstance(value, Servable):
        return True
    if isinstance(value, (type, types.FunctionType, types.ModuleType)) or not callable(value):
        return False
    return str(type(value).__module__).split(".")[0] in _APP_FRAMEWORKS


def _suggest_app(namespace: Any, attr: str, owner: str) -> str:
    if not isinstance(namespace, types.ModuleType):
        return ""
    apps = _apps_in(namespace)
    close = difflib.get_close_matches(attr, apps, n=1) or apps[:1]
    if close:
        return f"; did you mean {namespace.__name__}:{close[0]}?"
    return f"; define the app there (app = McpApp(...)) or name the attribute that holds it: {owner}:NAME"


def _kind_of(obj: Any) -> tuple[str, str] | None:
    """``(kind, name)`` of a tool, prompt or resource (a decorated function or a definition)."""
    for attr, kind in ((TOOL_ATTR, "tool"), (PROMPT_ATTR, "prompt"), (RESOURCE_ATTR, "resource")):
        d = getattr(obj, attr, None) if callable(obj) else None
        if d is not None:
            return kind, str(getattr(d, "name", ""))
    if isinstance(obj, (ToolDefinition, PromptDefinition, ResourceDefinition)):
        return type(obj).__name__.removesuffix("Definition").lower(), obj.name
    return None


def check_servable(obj: Any, target: str) -> None:
    """Refuse what no server can serve: a tool, a class, a factory, any non-ASGI object.

    Raises:
        ConfigurationError: ``obj`` is not an ASGI app; the message says what it is and what to
            point at instead.
    """
    if isinstance(obj, Servable) or _is_app_instance(obj):
        return
    module = sys.modules.get(target.partition(":")[0])
    apps = _apps_in(module) if module is not None else []
    point = f"point at the app instead: {target.partition(':')[0]}:{apps[0]}" if apps else \
        "point at the app that serves it (app = McpApp(\"name\", \"1.0.0\", tools=[...]) in the module)"
    definition = _kind_of(obj)
    if definition is not None:
        kind, name = definition
        raise ConfigurationError(f"{target!r} is a {kind} ({name!r}), not an app; {point}")
    if isinstance(obj, types.ModuleType):
        raise ConfigurationError(f"{target!r} is a module, not an app; name the app in it: {obj.__name__}:app")
    if isinstance(obj, type):
        raise ConfigurationError(f"{target!r} is the class {obj.__name__}, not an app; create the app in the module "
                                 f"(app = {obj.__name__}(...)) and point at that: {target.partition(':')[0]}:app")
    if not callable(obj):
        raise ConfigurationError(f"{target!r} is a {type(obj).__name__}, not an ASGI app; {point}")
    try:
        inspect.signature(obj).bind(object(), object(), object())
    except TypeError:
        params = f"({', '.join(inspect.signature(obj).parameters)})"
        if isinstance(obj, (types.FunctionType, types.MethodType)):
            raise ConfigurationError(
                f"{target!r} is a function taking {params}, not an ASGI app (scope, receive, send); if it builds the "
                f"app, call it in the module (app = {obj.__name__}()) and point at that") from None
        raise ConfigurationError(f"{target!r} is a {type(obj).__name__} called with {params}, not an ASGI app (scope, "
                                 "receive, send); point at an McpApp, or an ASGI app that mounts one") from None
    except ValueError:  # no signature to read (a builtin): let the server try it
        return
