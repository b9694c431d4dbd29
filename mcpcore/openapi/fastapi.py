"""A FastAPI app's routes as tools, called in process: its own OpenAPI document (``api.openapi()``),
tool names from the endpoints' function names where FastAPI generated the operation id, and
the app itself as the transport (no socket, no network hop)."""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import ConfigurationError
from .build import OpenApiTools, openapi_tools

__all__ = ["fastapi_tools"]


def _names(api: Any) -> dict[str, str]:
    """``{operation id: endpoint function name}`` for routes whose id FastAPI generated."""
    names: dict[str, str] = {}
    for route in getattr(api, "routes", ()):
        unique = getattr(route, "unique_id", None)
        name = getattr(route, "name", None)
        if isinstance(unique, str) and isinstance(name, str) and getattr(route, "operation_id", None) is None:
            methods = sorted(getattr(route, "methods", None) or ())
            names[unique] = name
            for method in methods:  # FastAPI suffixes the id per method when a route has several
                names.setdefault(f"{unique}_{method.lower()}", f"{name}_{method.lower()}" if len(methods) > 1
                                 else name)
    return names


def fastapi_tools(api: Any, *, routes: Any = None, owner: Any = None, **options: Any) -> OpenApiTools:
    """Tools for a FastAPI app's routes, called through the app in process.

    Args:
        api: the FastAPI app (its routes declared before this is called).
        routes: which routes (required): endpoint function names, operation ids, ``"GET /path"``,
            ``"tag:name"``, :class:`~mcpcore.openapi.Route`, or ``READ_ONLY`` / ``ALL``.
        owner: deprecated since 0.2.0, removed in 0.4.0: nothing reads it; giving it warns
            (``DeprecationWarning``). It is still stored on :attr:`OpenApiTools.owner` until then.
        options: as :func:`~mcpcore.openapi.openapi_tools` takes them (``credentials``, ``prefix``...).

    Raises:
        ConfigurationError: ``api`` has no ``openapi()``, or as :func:`~mcpcore.openapi.openapi_tools`.
    """
    document = getattr(api, "openapi", None)
    if not callable(document):
        raise ConfigurationError("fastapi_tools: api must be a FastAPI app (it has no openapi())")
    if "client" in options:
        raise ConfigurationError("fastapi_tools calls the app in process; for a remote API use openapi_tools")
    names = {**_names(api), **dict(options.pop("names", None) or {})}
    if getattr(api, "openapi_schema", None) is not None:
        api.openapi_schema = None  # FastAPI caches its document: routes declared since count too
    built = openapi_tools(document(), routes=routes, app=api, names=names, **options)
    if owner is not None:
        warnings.warn("fastapi_tools(owner=...) is deprecated and will be removed in mcpcore 0.4.0: nothing reads "
                      "it; leave it out", DeprecationWarning, stacklevel=2)
        built.owner = owner
    return built
