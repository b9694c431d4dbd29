"""The child's middleware, run around calls to its mounted definitions.

A layer of the child sees the call as the child would (its own names and URIs, the child's
registry behind ``call.definition``); the parent's layers run outside it and see the parent's
names. List methods run the child's list hooks over the child's part of the list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..middleware.base import Call, CallNext, Middleware
from ..server.chain import Layers, Step

if TYPE_CHECKING:
    from ..extensions.seam import Seam
    from .names import Namespace

__all__ = ["ChildLayers", "Mounted", "Mounts"]

_NAMED = {"tools/call": "tools", "prompts/get": "prompts"}
_BY_URI = ("resources/read", "resources/subscribe", "resources/unsubscribe")
_LISTS = {"tools/list": ("tools", "name", "tools"), "prompts/list": ("prompts", "name", "prompts"),
          "resources/list": ("resources", "uri", "resources"),
          "resources/templates/list": ("resourceTemplates", "uriTemplate", "resources")}


def _always(step: Step) -> Callable[[str], Step]:
    return lambda _method: step


class Mounted(Protocol):
    """What the layers read of one mount (a :class:`~mcpcore.compose.Mount`)."""

    @property
    def ns(self) -> Namespace: ...

    @property
    def app(self) -> Seam | None: ...

    def owns(self, kind: str, parent_key: str) -> bool: ...


class Mounts(Protocol):
    """What the layers read of the parent's :class:`~mcpcore.compose.Composition`, at each call."""

    @property
    def owners(self) -> Mapping[tuple[str, str], Mounted]: ...

    @property
    def mounts(self) -> Sequence[Mounted]: ...


def _layered(m: Mounted | None) -> Seam | None:
    """The seam of ``m``'s child when it is an app with middleware."""
    return m.app if m is not None and m.app is not None and m.app.middleware else None


class ChildLayers(Middleware):
    """Put in the parent's middleware (innermost) by the first mount whose child has middleware."""

    name = "mounted children's middleware"

    def __init__(self, comp: Mounts) -> None:
        """``comp``: the parent's :class:`~mcpcore.compose.Composition` (its mounts read at each call)."""
        self.comp = comp

    def _route(self, method: str, params: dict[str, Any]) -> tuple[Mounted, dict[str, Any], str, str] | None:
        """The mount serving the call, its params in the child's names, and the key renamed."""
        if method in _NAMED:
            name = params.get("name")
            key = "name"
        elif method in _BY_URI:
            name = params.get("uri")
            key = "uri"
        elif method == "completion/complete":
            ref = params.get("ref")
            if not isinstance(ref, dict):
                return None
            key = "name" if ref.get("type") == "ref/prompt" else "uri"
            name = ref.get(key)
            if not isinstance(name, str):
                return None
            m = self._owner("prompts" if key == "name" else "resources", name)
            if m is None:
                return None
            child = m.ns.child_name(name) if key == "name" else m.ns.child_uri(name)
            return (m, {**params, "ref": {**ref, key: child}}, "ref", name) if child is not None else None
        else:
            return None
        if not isinstance(name, str):
            return None
        m = self._owner(_NAMED.get(method, "resources"), name)
        if m is None:
            return None
        child = m.ns.child_name(name) if key == "name" else m.ns.child_uri(name)
        return (m, {**params, key: child}, key, name) if child is not None else None

    def _owner(self, kind: str, name: str) -> Mounted | None:
        m = self.comp.owners.get((kind, name))
        if m is not None or kind != "resources":
            return m
        for m in self.comp.mounts:  # a URI a template of the mount serves
            child = m.ns.child_uri(name)
            app = _layered(m)
            if child is not None and app is not None and app.registry.find_resource(child) is not None:
                return m
        return None

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        method = call.method
        if method in _LISTS:
            return await self._list(call, call_next)
        found = self._route(method, call.params)
        app = _layered(found[0]) if found is not None else None
        if found is None or app is None:
            return await call_next(call)
        _m, child_params, key, _parent = found
        original = call.params

        async def inner(c: Call) -> Any:
            params = dict(c.params)
            params[key] = original[key]  # the parent's name: what the parent's registry serves
            return await call_next(Call(method, params, c._req, call._core))

        step = Layers(app.middleware, _always(inner), [method]).request(method)
        if step is None:
            return await call_next(call)
        return await step(Call(method, child_params, call._req, app.core))

    async def _list(self, call: Call, call_next: CallNext) -> Any:
        result = await call_next(call)
        field, key, kind = _LISTS[call.method]
        items = result.get(field) if isinstance(result, dict) else None
        if not isinstance(items, list):
            return result
        for m in self.comp.mounts:
            app = _layered(m)
            if app is None:
                continue
            rename = m.ns.child_name if kind != "resources" else m.ns.child_uri
            forward = m.ns.name if kind != "resources" else m.ns.uri
            mine = [e for e in items if isinstance(e.get(key), str) and m.owns(kind, e[key])] if kind != "resources" \
                else [e for e in items if isinstance(e.get(key), str) and rename(e[key]) is not None]
            if not mine:
                continue
            child_items = [{**e, key: rename(e[key])} for e in mine]

            async def inner(c: Call, child_items: list[dict[str, Any]] = child_items) -> Any:
                return {field: child_items}

            step = Layers(app.middleware, _always(inner), [call.method]).request(call.method)
            if step is None:
                continue
            out = await step(Call(call.method, call.params, call._req, app.core))
            kept = [{**e, key: forward(e[key])} for e in (out or {}).get(field, []) if isinstance(e, dict)]
            ids = {id(e) for e in mine}
            items = [e for e in items if id(e) not in ids] + kept
        result[field] = items
        return result
