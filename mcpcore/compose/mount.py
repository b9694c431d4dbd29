"""``app.mount(child, namespace=...)``: a live link from a child app's definitions to a parent's.

The parent serves a copy of each child definition under the namespace (the copy shares the
child's handler, schemas, ``visible_to``, scopes, dependencies, task support and App); the link
follows the child's registry, so what the child gains or loses later appears or goes, and
clients whose view changed are told. Notifications the child's handlers or ``child.notify``
publish reach the parent's clients with the parent's names; the child's middleware wraps the
calls to the child's definitions (:mod:`.layers`).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..bus.base import BusEvent, NotificationBus
from ..context import Context, Inbound
from ..definitions.prompts import PromptDefinition
from ..definitions.resources import ResourceDefinition, resource_entries
from ..definitions.tools import ToolDefinition
from ..definitions.uritemplate import UriTemplate
from ..errors import ConfigurationError
from ..extensions.apps import FLAT_KEY, App
from .carried import Carrier, ChildLifecycle, MountedPipeline, family_of
from .names import Namespace, check_namespace

if TYPE_CHECKING:
    from ..server.registry import Registry

__all__ = ["Composition", "Mount", "composition_of", "mount"]

Definition = ToolDefinition | PromptDefinition | ResourceDefinition
KINDS = ("tools", "prompts", "resources")

_serving: contextvars.ContextVar[tuple[Namespace, ...]] = contextvars.ContextVar("mcpcore_mount", default=())
"""The namespaces of the mounted definition running, outermost first (its notifications are renamed)."""


def _enter(ns: Namespace) -> contextvars.Token[tuple[Namespace, ...]]:
    return _serving.set((*_serving.get(), ns))


def rename_event(event: BusEvent, ns: Namespace) -> BusEvent:
    """``event`` (a list change or resource update in the child's names) in the parent's names."""
    kind = event.get("kind")
    if kind == "resource" and isinstance(event.get("uri"), str):
        return {**event, "uri": ns.uri(event["uri"])}
    names = event.get("names")
    if kind in KINDS and isinstance(names, list):
        rename = ns.uri if kind == "resources" else ns.name
        return {**event, "names": [rename(n) if isinstance(n, str) else n for n in names]}
    return event


class _ChildBus:
    """The child's bus once mounted: what ``child.notify`` publishes goes to the parent's bus, renamed
    (through the parent's own mount, when the parent is mounted in turn)."""

    def __init__(self, parent: Any, ns: Namespace) -> None:
        self.parent = parent
        self.ns = ns

    async def publish(self, event: BusEvent) -> None:
        await self.parent.notifier.bus.publish(rename_event(event, self.ns))

    def subscribe(self, callback: Callable[[BusEvent], None]) -> Callable[[], None]:
        bus: NotificationBus = self.parent.notifier.bus
        return bus.subscribe(callback)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None


class _RenamingNotify:
    """The parent's ``ctx.notify_*`` sink: events raised by a mounted handler are renamed first."""

    def __init__(self, inner: Callable[[dict[str, Any], Inbound], None]) -> None:
        self.inner = inner

    def __call__(self, event: dict[str, Any], req: Inbound) -> None:
        for ns in reversed(_serving.get()):  # a nested mount's names: the innermost first
            event = rename_event(event, ns)
        self.inner(event, req)


@contextlib.contextmanager
def _named(ns: Namespace) -> Iterator[None]:
    token = _enter(ns)
    try:
        yield
    finally:
        _serving.reset(token)


def _renamed_lister(fn: Callable[[dict[str, Any]], Any], ns: Namespace,
                    carrier: Carrier | None) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """A template's list callback in the parent: run with the child's set-up, its URIs renamed."""
    async def run(kwargs: dict[str, Any]) -> Any:
        ctx = next((v for v in kwargs.values() if isinstance(v, Context)), None)
        with carrier.around(ctx._req) if carrier is not None and ctx is not None else _named(ns):
            entries = resource_entries(await fn(kwargs))
        return [{**e, "uri": ns.uri(e["uri"])} for e in entries]
    return run


def renamed_meta(meta: dict[str, Any] | None, ns: Namespace) -> dict[str, Any] | None:
    """A tool's ``_meta`` with the App view it names (``ui.resourceUri`` and the flat key) renamed."""
    if not meta:
        return meta
    out = dict(meta)
    ui = out.get("ui")
    if isinstance(ui, dict) and isinstance(ui.get("resourceUri"), str):
        out["ui"] = {**ui, "resourceUri": ns.uri(ui["resourceUri"])}
    if isinstance(out.get(FLAT_KEY), str):
        out[FLAT_KEY] = ns.uri(out[FLAT_KEY])
    return out


class Mount:
    """One child behind one namespace in one parent."""

    def __init__(self, comp: Composition, child: Any, ns: Namespace, *, app: bool = True) -> None:
        self.comp = comp
        self.child = child
        self.ns = ns
        self.app = child if app else None
        """The child when it is an app in process (``None``: a proxy)."""
        self.carrier = Carrier(child, lambda: _enter(ns), _serving.reset) if app else None
        self.apps: dict[App, App] = {}
        """The child's MCP Apps and the parent's copies of them, their views renamed."""
        self.where = f"mount {ns.namespace!r} (app {child.server_info.get('name')!r})"
        self.copies: dict[str, dict[Definition, Definition]] = {k: {} for k in KINDS}
        self.held: dict[str, list[str]] | None = None
        """While set, the parent's names that changed are collected here, not announced one by one."""

    def child_definitions(self, kind: str) -> list[Definition]:
        r = self.child.registry
        if kind == "tools":
            return list(r.tools.values())
        if kind == "prompts":
            return list(r.prompts.values())
        views = r.views()
        return [d for d in (*r.resources.values(), *r.templates) if d not in views]

    def copy(self, d: Definition) -> Definition:
        ns = self.ns
        out: Definition
        if isinstance(d, ToolDefinition):
            out = dataclasses.replace(d, name=ns.check_budget("tool", d.name, self.where),
                                      meta=renamed_meta(d.meta, ns))
            if d.app is not None and d.app.uri is not None:
                out.app = self.renamed_app(d.app, d.app.uri)
        elif isinstance(d, PromptDefinition):
            out = dataclasses.replace(d, name=ns.name(d.name))
        else:
            uri = ns.uri(d.uri)
            out = dataclasses.replace(d, uri=uri, template=UriTemplate(uri))
            if d.list_call is not None:
                out.list_call = _renamed_lister(d.list_call, ns, self.carrier)
        if self.carrier is not None:
            inner = d.pipeline.carrier if isinstance(d.pipeline, MountedPipeline) else None  # a mount of the child's
            out.pipeline = MountedPipeline(family_of(out), out, self.carrier.around_inner(inner))
        return out

    def renamed_app(self, app: App, uri: str) -> App:
        """The parent's copy of the child's ``app``, its view under the namespace (one per app: tools
        sharing a view share its copy)."""
        found = self.apps.get(app)
        if found is None:
            found = self.apps[app] = dataclasses.replace(app, uri=self.ns.uri(uri), _definition=None)
        return found

    def sync(self, kind: str) -> list[str]:
        """Bring the parent's copies of ``kind`` in line with the child; the parent's names that changed."""
        table = self.copies[kind]
        current = self.child_definitions(kind)
        present = set(current)
        gone = [d for d in table if d not in present]
        new = [(d, self.copy(d)) for d in current if d not in table]
        registry = self.comp.parent.registry
        for d, c in new:  # check every name before changing anything
            self.comp.check_free(kind, key_of(c), self, key_of(d))
        changed: list[str] = []
        for d in gone:
            c = table.pop(d)
            remove(registry, c)
            self.comp.owners.pop((kind, key_of(c)), None)
            changed.append(key_of(c))
        for d, c in new:
            registry.add(c)
            table[d] = c
            self.comp.owners[(kind, key_of(c))] = self
            changed.append(key_of(c))
        return changed

    def owns(self, kind: str, parent_key: str) -> bool:
        return self.comp.owners.get((kind, parent_key)) is self


def key_of(d: Definition) -> str:
    return d.uri if isinstance(d, ResourceDefinition) else d.name


def remove(registry: Registry, d: Definition) -> None:
    if isinstance(d, ToolDefinition):
        registry.remove_tool(d.name)
    elif isinstance(d, PromptDefinition):
        registry.remove_prompt(d.name)
    else:
        registry.remove_resource(d.uri)


class Composition:
    """What a parent app mounts: each mount, and which mount serves each of the parent's names."""

    def __init__(self, parent: Any) -> None:
        self.parent = parent
        self.mounts: list[Mount] = []
        self.owners: dict[tuple[str, str], Mount] = {}
        self.layers: Any = None
        self.lifecycle: ChildLifecycle | None = None
        self.proxies: Any = None
        parent.services.notify = _RenamingNotify(parent.services.notify)

    def check_free(self, kind: str, name: str, mount: Mount, child_name: str) -> None:
        r = self.parent.registry
        taken = name in r.tools if kind == "tools" else name in r.prompts if kind == "prompts" else (
            name in r.resources or any(t.uri == name for t in r.templates))
        if not taken:
            return
        owner = self.owners.get((kind, name))
        other = owner.where if owner is not None else f"the parent app {self.parent.server_info.get('name')!r}"
        noun = {"tools": "tool", "prompts": "prompt", "resources": "resource"}[kind]
        raise ConfigurationError(
            f"{mount.where}: {noun} {name!r} (the child's {child_name!r}) collides with the {noun} {name!r} "
            f"that {other} serves. Fix: mount under another namespace, or rename one of them (name=...).")

    def proxy_readiness(self) -> tuple[dict[str, str], bool]:
        """Each proxied backend's state for ``/readyz``, and whether one that is required is down."""
        parts: dict[str, str] = {}
        failing = False
        for p in self.proxies.proxies if self.proxies is not None else ():
            state, fails = p.readiness()
            parts[f"proxy:{p.mount.ns.namespace}"] = state
            failing = failing or fails
        return parts, failing

    def on_child_change(self, mount: Mount, kind: str) -> None:
        if kind not in KINDS:
            return
        changed = mount.sync(kind)
        if mount.held is not None:
            mount.held.setdefault(kind, []).extend(changed)
        elif changed and self.parent._started:
            self.parent.notifier.publish({"kind": kind, "origin": None, "names": changed})


def composition_of(parent: Any) -> Composition:
    comp: Composition | None = parent.composition
    if comp is None:
        comp = parent.composition = Composition(parent)
    return comp


def mount(parent: Any, child: Any, namespace: str | None = None, *, separator: str | None = None) -> Mount:
    """Serve ``child``'s definitions (an ``McpApp``, or a :func:`~mcpcore.compose.proxy`) in ``parent``
    under ``namespace`` (see :meth:`McpApp.mount`)."""
    from ..server.registry import Registry
    from .proxied import Proxy, ProxyLifecycle

    s = parent.settings
    sep = separator if separator is not None else s.mount_separator
    if namespace is None and isinstance(child, Proxy):
        namespace = child.namespace
    if namespace is None:
        raise ConfigurationError("mount needs a namespace (mount(child, namespace=...))")
    check_namespace(namespace, sep)
    if isinstance(child, Proxy) and parent._started:
        raise ConfigurationError("mount a proxy before the parent starts")
    if not isinstance(getattr(child, "registry", None), Registry):
        raise ConfigurationError(f"mount takes an McpApp (or a proxy(...) source), got {child!r}")
    if child is parent:
        raise ConfigurationError("an app cannot mount itself")
    comp = composition_of(parent)
    if any(m.ns.namespace == namespace for m in comp.mounts):
        raise ConfigurationError(f"namespace {namespace!r} is already mounted in {parent.server_info.get('name')!r}")
    if parent._started and not isinstance(child, Proxy) and (
            child.middleware or child._setup is not None or child.stack.state.given is not None):
        raise ConfigurationError("mount a child with middleware, a setup hook or its own storage before the "
                                 "parent starts (they start with the parent)")
    ns = Namespace(namespace, sep, s.tool_name_limit, s.tool_name_client_prefix)
    m = Mount(comp, child, ns, app=not isinstance(child, Proxy))
    for kind in KINDS:
        try:
            m.sync(kind)
        except ConfigurationError:
            for k in KINDS:  # leave the parent as it was
                for c in m.copies[k].values():
                    remove(parent.registry, c)
                    comp.owners.pop((k, key_of(c)), None)
            raise
    comp.mounts.append(m)
    child.registry.on_change(lambda kind: comp.on_child_change(m, kind))
    if isinstance(child, Proxy):
        child.attach(parent, m)
        if comp.proxies is None:
            comp.proxies = ProxyLifecycle()
            parent.add_middleware(comp.proxies)
            parent.stores.probes.append(comp.proxy_readiness)
        comp.proxies.proxies.append(child)
        return m
    if comp.lifecycle is None and not parent._started:
        comp.lifecycle = ChildLifecycle(comp)
        parent.add_middleware(comp.lifecycle)
    child.notifier.bus = _ChildBus(parent, ns)
    for topic in child.dispatcher.core.listen_topics:
        if type(topic).__name__ != "TaskTopic" and topic not in parent.dispatcher.core.listen_topics:
            parent.dispatcher.core.listen_topics.append(topic)
    if child.middleware:
        from .layers import ChildLayers

        if comp.layers is None:
            comp.layers = ChildLayers(comp)
            parent.add_middleware(comp.layers)
    return m
