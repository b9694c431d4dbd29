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
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from ..bus.base import BusEvent, NotificationBus
from ..context import Context, Inbound
from ..definitions.prompts import PromptDefinition
from ..definitions.resources import ResourceDefinition, resource_entries
from ..definitions.tools import ToolDefinition
from ..definitions.uritemplate import UriTemplate
from ..errors import ConfigurationError
from ..extensions.apps import FLAT_KEY, App
from ..extensions.seam import Seam
from .carried import Carrier, ChildLifecycle, MountedPipeline, family_of
from .names import Namespace, check_namespace

if TYPE_CHECKING:
    from ..middleware.base import Middleware
    from ..server.notify import Notifier
    from ..server.registry import Registry
    from .layers import ChildLayers
    from .lifecycle import ProxyLifecycle
    from .proxied import Proxy

__all__ = ["Composition", "Mount", "mount"]

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

    def __init__(self, parent: Notifier, ns: Namespace) -> None:
        self.parent = parent
        """The parent's notifier (its bus read at each event: the parent may be mounted later)."""
        self.ns = ns

    async def publish(self, event: BusEvent) -> None:
        await self.parent.bus.publish(rename_event(event, self.ns))

    def subscribe(self, callback: Callable[[BusEvent], None]) -> Callable[[], None]:
        bus: NotificationBus = self.parent.bus
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


class Source(Protocol):
    """What a mount reads of its child: a child app's :class:`~mcpcore.extensions.Seam`, or a proxy."""

    @property
    def registry(self) -> Registry: ...

    @property
    def server_info(self) -> dict[str, Any]: ...

    @property
    def middleware(self) -> list[Middleware]: ...


class Mount:
    """One child behind one namespace in one parent."""

    def __init__(self, comp: Composition, child: Source, ns: Namespace) -> None:
        self.comp = comp
        self.child = child
        """The child's seam (an app in process), or the proxy."""
        self.ns = ns
        self.app = child if isinstance(child, Seam) else None
        """The child's seam when it is an app in process (``None``: a proxy)."""
        self.proxy: Proxy | None = None
        """The child when it is a proxy."""
        self.carrier = Carrier(self.app, lambda: _enter(ns), _serving.reset) if self.app is not None else None
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
        registry = self.comp.seam.registry
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
    """What a parent app mounts: each mount, and which mount serves each of the parent's names.

    It sees the parent through the parent's :class:`~mcpcore.extensions.Seam` (its registry, notifier,
    middleware, readiness probes, settings), and each child app through the child's own seam."""

    def __init__(self, seam: Seam) -> None:
        self.seam = seam
        """The parent's seam."""
        self.mounts: list[Mount] = []
        self.owners: dict[tuple[str, str], Mount] = {}
        self.layers: ChildLayers | None = None
        self.lifecycle: ChildLifecycle | None = None
        self.proxies: ProxyLifecycle | None = None
        seam.services.notify = _RenamingNotify(seam.services.notify)

    def check_free(self, kind: str, name: str, mount: Mount, child_name: str) -> None:
        r = self.seam.registry
        taken = name in r.tools if kind == "tools" else name in r.prompts if kind == "prompts" else (
            name in r.resources or any(t.uri == name for t in r.templates))
        if not taken:
            return
        owner = self.owners.get((kind, name))
        other = owner.where if owner is not None else f"the parent app {self.seam.server_info.get('name')!r}"
        noun = {"tools": "tool", "prompts": "prompt", "resources": "resource"}[kind]
        raise ConfigurationError(
            f"{mount.where}: {noun} {name!r} (the child's {child_name!r}) collides with the {noun} {name!r} "
            f"that {other} serves. Fix: mount under another namespace, or rename one of them (name=...).")

    def proxy_readiness(self) -> tuple[dict[str, str], bool]:
        """Each proxied backend's state for ``/readyz``, and whether one that is required is down."""
        parts: dict[str, str] = {}
        failing = False
        for m in self.mounts:
            if m.proxy is not None:
                state, fails = m.proxy.readiness()
                parts[f"proxy:{m.ns.namespace}"] = state
                failing = failing or fails
        return parts, failing

    def on_child_change(self, mount: Mount, kind: str) -> None:
        if kind not in KINDS:
            return
        changed = mount.sync(kind)
        if mount.held is not None:
            mount.held.setdefault(kind, []).extend(changed)
        elif changed and self.seam.started:
            self.seam.notifier.publish({"kind": kind, "origin": None, "names": changed})

    def children(self) -> list[Seam]:
        """The seams of the apps mounted in process, in order of mounting."""
        return [m.app for m in self.mounts if m.app is not None]

    def mount(self, child: object, namespace: str | None = None, *, separator: str | None = None) -> Mount:
        """Serve ``child``'s definitions (a child app's seam, or a :func:`~mcpcore.compose.proxy`) under
        ``namespace`` (see :meth:`McpApp.mount`)."""
        from .proxied import Proxy, ProxyLifecycle

        parent = self.seam
        s = parent.settings
        sep = separator if separator is not None else s.mount_separator
        if namespace is None and isinstance(child, Proxy):
            namespace = child.namespace
        if namespace is None:
            raise ConfigurationError("mount needs a namespace (mount(child, namespace=...))")
        check_namespace(namespace, sep)
        if isinstance(child, Proxy) and parent.started:
            raise ConfigurationError("mount a proxy before the parent starts")
        if not isinstance(child, (Seam, Proxy)):
            raise ConfigurationError(f"mount takes an McpApp (or a proxy(...) source), got {child!r}")
        if child is parent:
            raise ConfigurationError("an app cannot mount itself")
        if any(m.ns.namespace == namespace for m in self.mounts):
            raise ConfigurationError(f"namespace {namespace!r} is already mounted in "
                                     f"{parent.server_info.get('name')!r}")
        if parent.started and isinstance(child, Seam) and (
                child.middleware or child.setup is not None or child.own_state is not None):
            raise ConfigurationError("mount a child with middleware, a setup hook or its own storage before the "
                                     "parent starts (they start with the parent)")
        ns = Namespace(namespace, sep, s.tool_name_limit, s.tool_name_client_prefix)
        m = Mount(self, child, ns)
        for kind in KINDS:
            try:
                m.sync(kind)
            except ConfigurationError:
                for k in KINDS:  # leave the parent as it was
                    for c in m.copies[k].values():
                        remove(parent.registry, c)
                        self.owners.pop((k, key_of(c)), None)
                raise
        self.mounts.append(m)
        child.registry.on_change(lambda kind: self.on_child_change(m, kind))
        if isinstance(child, Proxy):
            m.proxy = child
            child.attach(parent, m)
            if self.proxies is None:
                self.proxies = ProxyLifecycle()
                parent.add_middleware(self.proxies)
                parent.add_probe(self.proxy_readiness)
            self.proxies.proxies.append(child)
            return m
        if self.lifecycle is None and not parent.started:
            self.lifecycle = ChildLifecycle(self.children)
            parent.add_middleware(self.lifecycle)
        child.notifier.bus = _ChildBus(parent.notifier, ns)
        for topic in child.core.listen_topics:
            if type(topic).__name__ != "TaskTopic" and topic not in parent.core.listen_topics:
                parent.add_listen_topic(topic)
        if child.middleware:
            from .layers import ChildLayers

            if self.layers is None:
                self.layers = ChildLayers(self)
                parent.add_middleware(self.layers)
        return m


class Mounting(Protocol):
    """What :func:`mount` (deprecated) is given as the parent: an app."""

    composition: Composition | None

    def mount(self, child: Any, namespace: Any, *, separator: str | None = None) -> Any: ...


def mount(parent: Mounting, child: Any, namespace: str | None = None, *, separator: str | None = None) -> Mount:
    """Deprecated since 0.2.0, removed in 0.4.0: call ``parent.mount(child, namespace)``
    (:meth:`McpApp.mount`), which this calls; returns the new :class:`Mount`."""
    warnings.warn("mcpcore.compose.mount(parent, child, ...) is deprecated and will be removed in mcpcore 0.4.0: "
                  "call parent.mount(child, namespace) instead", DeprecationWarning, stacklevel=2)
    parent.mount(child, namespace, separator=separator)
    assert parent.composition is not None
    return parent.composition.mounts[-1]
