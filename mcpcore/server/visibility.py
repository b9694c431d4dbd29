"""Caller-shaped listings: which definitions a caller sees (``visible_to=``).

A definition that declares scopes is seen by callers holding all of them (while auth is on and
scope checks are not disabled, as for ``auth=``); one that declares a predicate is seen when the
predicate, given a ``Context`` of the request, returns true (a predicate that raises hides it).
What a caller cannot see it cannot call: the families refuse it as unknown.

The lists are cached per *view*: the names of the gated definitions a caller sees. Callers with
the same view share the same cached bytes; definitions without ``visible_to`` cost nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from ..auth.scopes import has_scopes
from ..context import Context, Inbound
from ..definitions.common import SeenWithAny, VisibilityRule
from ..protocol.methods import BY_NAME

if TYPE_CHECKING:
    from ..config import Settings
    from .registry import Registry

__all__ = ["Gated", "ViewTracker", "may_see", "may_see_uri", "named_definition", "view_of", "visible_names"]

log = logging.getLogger("mcpcore.server")


class CoreParts(Protocol):
    """What visibility reads of the server core (:class:`mcpcore.server.core.ServerCore`)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def registry(self) -> Registry: ...


class Gated(Protocol):
    """A definition that may declare who sees it."""

    @property
    def visible_to(self) -> VisibilityRule: ...


def may_see(core: CoreParts, d: Gated, req: Inbound) -> bool:
    """Whether the caller of ``req`` sees (and may call) ``d``."""
    rule = d.visible_to
    if rule is None:
        return True
    if type(rule) is tuple:
        s = core.settings
        if s.auth_mode == "none" or s.auth_disable_scope_checks:
            return True
        auth = req.auth
        return auth is not None and has_scopes(auth.scopes, rule)
    if type(rule) is SeenWithAny:
        return any(may_see(core, owner, req) for owner in rule.owners)
    try:
        return bool(rule(Context(req, operation="visibility")))  # type: ignore[operator]
    except Exception:
        log.warning("a visible_to predicate failed; the definition stays hidden from this caller", exc_info=True,
                    extra={"fields": {"requestId": req.request_id}})
        return False


def may_see_uri(core: CoreParts, uri: str, req: Inbound) -> bool:
    """Whether the caller of ``req`` may read ``uri`` as far as visibility goes (a URI nothing
    serves counts as seen: it is answered as unknown either way)."""
    found = core.registry.find_resource(uri)
    return found is None or found[0].visible_to is None or may_see(core, found[0], req)


def named_definition(core: CoreParts, method: str, name: str, req: Inbound) -> Any:
    """The definition ``method`` calls by ``name`` (a tool, a prompt, the resource or template
    serving a URI) when the caller of ``req`` sees it; else ``None``."""
    r = core.registry
    m = BY_NAME.get(method)
    names = m.names if m is not None else None
    d: Any
    if names == "tool":
        d = r.tools.get(name)
    elif names == "prompt":
        d = r.prompts.get(name)
    elif names == "resource":
        found = r.find_resource(name)
        d = found[0] if found is not None else None
    else:
        return None
    if d is None or (d.visible_to is not None and not may_see(core, d, req)):
        return None
    return d


def view_of(core: CoreParts, gated: list[tuple[str, Any]], req: Inbound) -> tuple[str, ...]:
    """The view of ``req``'s caller over ``gated`` (``(name, definition)`` pairs): the names it sees."""
    return tuple(name for name, d in gated if may_see(core, d, req))


_KINDS = ("tools", "prompts", "resources")


def visible_names(core: CoreParts, kind: str, viewer: Inbound) -> frozenset[str]:
    """Every name (URI for resources and templates) of ``kind`` the caller of ``viewer`` sees."""
    r = core.registry
    if kind == "tools":
        return frozenset(n for n, d in r.tools.items() if may_see(core, d, viewer))
    if kind == "prompts":
        return frozenset(n for n, d in r.prompts.items() if may_see(core, d, viewer))
    return frozenset(d.uri for d in (*r.resources.values(), *r.templates) if may_see(core, d, viewer))


class ViewTracker:
    """What one receiver of list changes (a GET stream, a listen stream, a stdio connection) saw
    last, so a change naming definitions (``notify_tool_list_changed(names=[...])``) reaches it
    only when its view changed: it sees one of them now, or saw it before."""

    def __init__(self, core: CoreParts, viewer: Inbound) -> None:
        self.core = core
        self.viewer = viewer
        self._seen = {kind: visible_names(core, kind, viewer) for kind in _KINDS}

    def reaches(self, event: dict[str, Any]) -> bool:
        """Whether a bus event is for this receiver's view: a resource update only when it may
        read the resource, a list change as below, events of other kinds always."""
        kind = event.get("kind")
        if kind not in _KINDS:
            uri = event.get("uri")
            return kind != "resource" or type(uri) is not str or may_see_uri(self.core, uri, self.viewer)
        names = event.get("names")
        assert isinstance(kind, str)
        now = visible_names(self.core, kind, self.viewer)
        before = self._seen[kind]
        self._seen[kind] = now
        if not isinstance(names, list) or not names:
            return True
        return any(n in now or n in before for n in names)
