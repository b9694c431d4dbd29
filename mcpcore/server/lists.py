"""``tools/list``, ``prompts/list``, ``resources/list`` and ``resources/templates/list``: pages of
what the caller sees, serialised once per era, page and view (see :mod:`.visibility`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _json
from ..context import Inbound
from ..protocol.jsonrpc import result_response
from ..protocol.methods import LIST_METHODS
from ..protocol.pagination import page
from ..protocol.versions import Era
from . import resources as resource_methods
from .visibility import may_see, view_of

if TYPE_CHECKING:
    from .core import ServerCore

__all__ = ["LIST_METHODS", "Lists"]

_CACHE_MAX = 1024


class Lists:
    """Answers the list methods for one app."""

    def __init__(self, core: ServerCore, shape_modern: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
        self.core = core
        self.shape_modern = shape_modern
        self._bytes: dict[tuple[Any, ...], bytes] = {}
        self._gated: dict[str, list[tuple[str, Any]]] = {}

    def invalidate(self) -> None:
        """Forget what was served (a definition was added or removed)."""
        self._bytes.clear()
        self._gated.clear()

    def gated(self, method: str) -> list[tuple[str, Any]]:
        """The definitions of ``method``'s list that declare ``visible_to``, by name (URI)."""
        found = self._gated.get(method)
        if found is None:
            r = self.core.registry
            if method == "tools/list":
                found = [(t.name, t) for t in r.tools.values() if t.visible_to is not None]
            elif method == "prompts/list":
                found = [(p.name, p) for p in r.prompts.values() if p.visible_to is not None]
            elif method == "resources/templates/list":
                found = [(t.uri, t) for t in r.templates if t.visible_to is not None]
            else:
                found = [(d.uri, d) for d in (*r.resources.values(), *r.templates) if d.visible_to is not None]
            self._gated[method] = found
        return found

    def _dynamic(self, method: str) -> bool:
        return method == "resources/list" and any(t.list_call for t in self.core.registry.templates)

    async def answer(self, rid: Any, method: str, params: dict[str, Any], req: Inbound) -> bytes:
        """The whole response, from the cache when this era, page and view were served before."""
        gated = self.gated(method)
        key = (req.era, method, params.get("cursor"), view_of(self.core, gated, req) if gated else ())
        dynamic = self._dynamic(method)
        cached = None if dynamic else self._bytes.get(key)
        if cached is None:
            result = await self.result(method, params, req)
            if req.era is Era.MODERN:
                result = self.shape_modern(method, result)
            cached = _json.dumps(result)
            if not dynamic and len(self._bytes) < _CACHE_MAX:
                self._bytes[key] = cached
        return result_response(rid, cached)

    async def fresh(self, method: str, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        """The result as a new object a middleware layer may change freely."""
        out: dict[str, Any] = _json.loads(_json.dumps(await self.result(method, params, req)))
        return out

    async def result(self, method: str, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        """One page of the list as the caller sees it (shared objects: do not change them)."""
        cursor = params.get("cursor")
        core = self.core
        size = core.settings.list_page_size
        r = core.registry
        if method == "tools/list":
            modern = req.era is Era.MODERN
            items, nxt = page([t.to_wire(modern) for t in r.tools.values() if may_see(core, t, req)], cursor, size)
            result: dict[str, Any] = {"tools": list(items)}
        elif method == "prompts/list":
            items, nxt = page([p.to_wire() for p in r.prompts.values() if may_see(core, p, req)], cursor, size)
            result = {"prompts": list(items)}
        elif method == "resources/templates/list":
            items, nxt = page([t.template_listing() for t in r.templates if may_see(core, t, req)], cursor, size)
            result = {"resourceTemplates": list(items)}
        else:
            items, nxt = page(await resource_methods.all_resources(core, req), cursor, size)
            result = {"resources": list(items)}
        if nxt is not None:
            result["nextCursor"] = nxt
        return result
