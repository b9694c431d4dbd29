"""``proxy(url)``: a remote MCP server as a source of definitions a parent mounts.

``app.mount(proxy("https://billing.internal/mcp"), namespace="billing")``. The proxy lists the
backend's tools, prompts, resources and templates with its own credentials, keeps them current
(the backend's list changes, and a refresh every ``ttlMs`` it gives or ``refresh_s``), and
hands each call over whole: the caller's ``_meta`` (not the connection's), progress and log
messages back, the backend's questions to the caller, its errors with their code and data.
The caller's ``Authorization`` never travels: the backend gets the proxy's ``credentials``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from ..context import Context, Inbound
from ..credentials import CallerToken, CredentialFailed, CredentialPolicy, DelegatedToken
from ..errors import ConfigurationError, JsonRpcErrorCode, McpError
from ..middleware.base import Middleware
from ..protocol.extensions import TASKS
from ..protocol.versions import Era
from ..server.registry import Registry
from ..server.results import tool_error_result
from .asking import Asking
from .backend import BackendUnavailable, HttpBackend
from .lifecycle import MountedAt, ProxyLifecycle
from .relay import Completions, backend_error, relay_to
from .sessions import MemorySessionTable, RedisSessionTable, SessionTable
from .stdio import StdioBackend
from .views import CallerViews, Lists
from .wire import Breaker, prompt_from, resource_from, template_from, tool_from, wrap_for_legacy

if TYPE_CHECKING:
    from ..config import Settings
    from ..extensions.seam import Seam

__all__ = ["Proxy", "ProxyLifecycle", "proxy"]

log = logging.getLogger("mcpcore.compose")

Credentials = CredentialPolicy | None
_LISTS = (("tools", "tools/list", "tools"), ("prompts", "prompts/list", "prompts"),
          ("resources", "resources/list", "resources"), ("templates", "resources/templates/list", "resourceTemplates"))
_DROP_LEGACY = ("resultType", "ttlMs", "cacheScope")


def proxy(target: str | Sequence[str], *, namespace: str | None = None, credentials: Credentials = None,
          era: str = "auto",
          required: bool = False, timeout: float = 60.0, refresh_s: float = 300.0, failures: int = 5,
          cooldown_s: float = 5.0, transport: Any = None) -> Proxy:
    """A remote MCP server (``http(s)://.../mcp``), or a command run as a stdio server
    (``["python", "server.py"]``), to mount: ``app.mount(proxy(url), namespace="x")``.

    Args:
        namespace: the namespace ``app.mount`` uses when it is given none.
        credentials: what the backend gets, a :mod:`mcpcore.credentials` policy: ``None`` or
            ``NoCredentials()`` (nothing), ``StaticHeader(...)``, ``DelegatedToken(audience)`` (token
            exchange per caller) or ``CallerToken(audience)`` (the caller's own token, opt-in, only for a
            backend of its audience). The caller's ``Authorization`` is never forwarded otherwise. The
            proxy's own requests (lists, its notification stream) carry a per-caller policy's credential
            only when it can be had without a caller (``StaticHeader``); else none.
        era: ``"auto"`` (``server/discover``, else the 2025 handshake), ``"modern"`` or ``"legacy"``.
        required: ``/readyz`` fails while the backend fails (default: it only reports it).
        timeout: seconds a backend request may take.
        refresh_s: how often lists are fetched again when the backend gives no ``ttlMs``.
        failures, cooldown_s: the circuit breaker: after ``failures`` failures in a row, calls fail fast
            for ``cooldown_s`` (doubling while the backend stays down).
        transport: an ``httpx.AsyncBaseTransport`` for the backend (tests reach an app in process).
    """
    if (isinstance(target, str) and not target.startswith(("http://", "https://"))) or not target:
        raise ValueError(f"proxy() takes an http(s) URL of an MCP endpoint or a command list, got {target!r}")
    if credentials is not None and not isinstance(credentials, CredentialPolicy):
        raise ConfigurationError(f"proxy(credentials=) takes a policy of mcpcore.credentials (NoCredentials, "
                                 f"StaticHeader, DelegatedToken, CallerToken), got {credentials!r}")
    return Proxy(target, namespace=namespace, credentials=credentials, era=era, required=required, timeout=timeout,
                 refresh_s=refresh_s, breaker=Breaker(failures, cooldown_s), transport=transport)


class Proxy:
    """A backend's definitions, kept in :attr:`registry` (the child side of a mount)."""

    def __init__(self, url: str | Sequence[str], *, namespace: str | None, credentials: Credentials, era: str,
                 required: bool,
                 timeout: float, refresh_s: float, breaker: Breaker, transport: Any) -> None:
        self.command = list(url) if not isinstance(url, str) else None
        self.url = url if isinstance(url, str) else " ".join(url)
        self.namespace = namespace
        self.credentials = credentials
        self.era = era
        self.required = required
        self.timeout = timeout
        self.refresh_s = refresh_s
        self.breaker = breaker
        self.transport = transport
        self.registry = Registry()
        self.server_info: dict[str, Any] = {"name": url}
        self.middleware: list[Middleware] = []
        self.backend: HttpBackend | StdioBackend | None = None
        self.mount: MountedAt | None = None
        """The :class:`~mcpcore.compose.Mount` serving it, once mounted."""
        self.parent: Seam | None = None
        """The seam of the app that mounts it (its notifier, Redis client, declarations)."""
        self._listener: asyncio.Task[None] | None = None
        self._ttl_s: float | None = None
        self._entries: dict[str, dict[str, dict[str, Any]]] = {}
        self.asking = Asking()
        self.views = CallerViews(lambda req: self._lists(("tools", "prompts", "resources", "templates"), req),
                                 lambda kind, entries: self._sync(kind, entries, union=True), refresh_s) \
            if isinstance(credentials, (DelegatedToken, CallerToken)) else None
        """Each caller's own lists, for a backend reached with each caller's own credential."""

    # -- lifecycle --------------------------------------------------------------------------------

    def attach(self, parent: Seam, mount: MountedAt) -> None:
        self.parent = parent
        self.mount = mount
        self.server_info = {"name": f"proxy {mount.ns.namespace} ({self.url})"}

    async def start(self, settings: Settings) -> None:
        parent, mount = self.parent, self.mount
        assert parent is not None and mount is not None
        ns = mount.ns.namespace
        table: SessionTable = MemorySessionTable() if parent.redis is None else RedisSessionTable(
            parent.redis, f"mcpcore:proxy:{ns}:", max(60, settings.session_idle_ms // 1000))
        if self.command is not None:
            self.backend = StdioBackend(self.command, name=f"proxy {ns!r}", era=self.era, timeout=self.timeout)
        else:
            self.backend = HttpBackend(self.url, name=f"proxy {ns!r}", table=table, auth=self._auth, era=self.era,
                                       timeout=self.timeout, transport=self.transport)
        try:
            await self.backend.start()
            caps = getattr(self.backend, "discovered", {}).get("capabilities") or {}
            if TASKS in (caps.get("extensions") or {}):
                parent.declare(TASKS, {})  # its calls may become tasks, polled here
            for kind in ("tools", "prompts", "resources") if self.views is not None else ():
                if kind in caps or not caps:  # served to callers before any caller's list filled them
                    parent.declare_kind(kind)
            await self.refresh()
        except (BackendUnavailable, McpError) as exc:
            self.breaker.failure(str(exc))
            log.warning("proxy %r: the backend %s did not list its definitions (%s); retrying in the background",
                        ns, self.url, exc)
        self._listener = asyncio.get_running_loop().create_task(self._follow())

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(BaseException):
                await self._listener
            self._listener = None
        self.asking.close()
        if self.backend is not None:
            await self.backend.close()

    async def _auth(self, req: Inbound | None) -> httpx.Auth | None:
        policy = self.credentials
        if policy is None:
            return None
        if req is None:  # the proxy's own request: a credential that needs no caller, or none
            try:
                return await policy.auth(None)
            except CredentialFailed:
                return None
        return await policy.auth(Context(req, operation="proxy"))

    @property
    def task_prefix(self) -> str:
        """What this proxy's tasks' ids start with at the gateway (``proxy:<namespace>:``)."""
        return f"proxy:{self.mount.ns.namespace}:" if self.mount is not None else "proxy::"

    def readiness(self) -> tuple[str, bool]:
        """``("ok" | why not, whether that fails the server's readiness)``."""
        if self.breaker.failures == 0:
            return "ok", False
        return f"unavailable ({self.breaker.last_error})", self.required

    # -- lists ------------------------------------------------------------------------------------

    async def refresh(self, kinds: tuple[str, ...] = ("tools", "prompts", "resources", "templates"), *,
                      announce: bool = False) -> None:
        """Fetch the backend's lists (with the proxy's own credentials) and bring the registry in line;
        the parent's clients are told once per list that changed (every list asked for, with ``announce``:
        the backend said it changed)."""
        mount = self.mount
        if mount is not None:
            mount.held = {}
        try:
            await self._refresh(kinds)
        finally:
            held = mount.held if mount is not None else None
            if mount is not None:
                mount.held = None
            if held is not None and self.parent is not None and self.parent.started:
                for kind in {"resources" if k == "templates" else k for k in kinds}:
                    if held.get(kind) or announce:
                        self.parent.notifier.publish_here({"kind": kind, "origin": None, **(
                            {"names": held[kind]} if held.get(kind) and not announce else {})})

    async def _refresh(self, kinds: tuple[str, ...]) -> None:
        if self.views is not None:  # lists are the callers' own, fetched when they ask
            self.views.stale()
        else:
            lists, ttl = await self._lists(kinds, None)
            self._ttl_s = ttl or self._ttl_s
            for kind, entries in lists.items():
                self._sync(kind, entries)
        self.breaker.success()

    async def _lists(self, kinds: tuple[str, ...], req: Inbound | None) -> tuple[Lists, float | None]:
        """The backend's lists of ``kinds`` for ``req``'s caller (``None``: the proxy's own), and the
        shortest ``ttlMs`` their pages gave (in seconds, at least 1), if any."""
        backend, out, ttl_s = self._backend(), {}, None
        for kind, method, field in _LISTS:
            if kind not in kinds:
                continue
            entries: list[dict[str, Any]] = []
            cursor: Any = None
            for _ in range(1000):
                try:
                    page = await backend.request(method, {"cursor": cursor} if cursor else {}, req)
                except McpError as exc:
                    if exc.code == JsonRpcErrorCode.MethodNotFound:  # the backend serves none of these
                        break
                    raise
                entries += [e for e in page.get(field) or [] if isinstance(e, dict)]
                ttl = page.get("ttlMs")
                if isinstance(ttl, int) and ttl > 0:
                    ttl_s = min(ttl_s or 1e9, max(ttl / 1000, 1.0))
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            out[kind] = entries
        return out, ttl_s

    def _sync(self, kind: str, entries: list[dict[str, Any]], union: bool = False) -> None:
        r = self.registry
        key = "uriTemplate" if kind == "templates" else "uri" if kind == "resources" else "name"
        wanted = {e[key]: e for e in entries if isinstance(e.get(key), str)}
        current: dict[str, Any] = dict(r.tools) if kind == "tools" else dict(r.prompts) if kind == "prompts" \
            else dict(r.resources) if kind == "resources" else {t.uri: t for t in r.templates}
        drop: Callable[[str], bool] = r.remove_tool if kind == "tools" else r.remove_prompt if kind == "prompts" \
            else r.remove_resource
        seen = self._entries.setdefault(kind, {})
        for name in current:
            if (name not in wanted and not union) or (name in wanted and seen.get(name) != wanted[name]):
                drop(name)
                seen.pop(name, None)
        for name, e in wanted.items():
            if name not in current or seen.get(name) != e:
                r.add(self._make(kind, e))
                seen[name] = e

    def _make(self, kind: str, e: dict[str, Any]) -> Any:
        d = self._definition(kind, e)
        if self.views is not None:
            key = "uriTemplate" if kind == "templates" else "uri" if kind == "resources" else "name"
            d.visible_to = self.views.sees(kind, e[key], e)
        return d

    def _definition(self, kind: str, e: dict[str, Any]) -> Any:
        if kind == "tools":
            return tool_from(e, self._forward("tools/call", "name", e["name"], tool=True))
        if kind == "prompts":
            return prompt_from(e, self._forward("prompts/get", "name", e["name"]),
                               Completions(self, {"type": "ref/prompt", "name": e["name"]}))
        if kind == "resources":
            return resource_from(e, self._forward("resources/read", "uri", None))
        return template_from(e, self._forward("resources/read", "uri", None),
                             Completions(self, {"type": "ref/resource", "uri": e["uriTemplate"]}))

    async def _follow(self) -> None:
        """Keep the lists current: the backend's notification stream, else a refresh every ``ttlMs``
        (or ``refresh_s``); after a lost stream, lists are fetched again (a change may have been missed)."""
        backend = self._backend()
        delay = 1.0
        fresh = True  # start() has just listed
        streams = True
        while True:
            try:
                if not fresh:
                    await self.refresh()
                fresh = False
                if not streams:
                    await asyncio.sleep(self._ttl_s or self.refresh_s)
                    continue
                wanted: dict[str, Any] = {"toolsListChanged": True, "promptsListChanged": True,
                                          "resourcesListChanged": True}
                if self.registry.resources:
                    wanted["resourceSubscriptions"] = list(self.registry.resources)
                async with backend.events(wanted) as messages:
                    delay = 1.0
                    async for msg in messages:
                        await self._notified(msg)
            except asyncio.CancelledError:
                raise
            except McpError as exc:  # the backend has no notification stream: refresh on a timer
                log.info("proxy %s: no notification stream (%s); lists are refreshed every %.0f s", self.url, exc,
                         self._ttl_s or self.refresh_s)
                streams = False
                fresh = True
                continue
            except Exception as exc:
                if isinstance(exc, BackendUnavailable):
                    self.breaker.failure(str(exc))
                log.info("proxy %s: the notification stream ended (%s); again in %.0f s", self.url, exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)

    async def _notified(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method == "notifications/tools/list_changed":
            await self.refresh(("tools",), announce=True)
        elif method == "notifications/prompts/list_changed":
            await self.refresh(("prompts",), announce=True)
        elif method == "notifications/resources/list_changed":
            await self.refresh(("resources", "templates"), announce=True)
        elif method == "notifications/resources/updated":
            uri = (msg.get("params") or {}).get("uri")
            if isinstance(uri, str) and self.parent is not None and self.mount is not None:
                self.parent.notifier.publish_here({"kind": "resource", "uri": self.mount.ns.uri(uri), "origin": None})

    def _backend(self) -> HttpBackend | StdioBackend:
        if self.backend is None:
            raise BackendUnavailable(f"proxy {self.url}: not started")
        return self.backend

    # -- calls ------------------------------------------------------------------------------------

    def _forward(self, method: str, key: str, child: str | None, *, tool: bool = False) -> Any:
        async def forward(params: dict[str, Any], req: Inbound) -> dict[str, Any]:
            sent = dict(params)
            if child is not None:
                sent[key] = child
            else:
                uri = self.mount.ns.child_uri(sent[key]) if self.mount is not None else None
                sent[key] = uri if uri is not None else sent[key]
            result = await self.call(method, sent, req, tool=tool)
            if method == "resources/read" and self.mount is not None:
                for item in result.get("contents") or []:
                    if isinstance(item, dict) and isinstance(item.get("uri"), str):
                        item["uri"] = self.mount.ns.uri(item["uri"])
            return result
        return forward

    async def call(self, method: str, params: dict[str, Any], req: Inbound | None, *, tool: bool = False,
                   ) -> dict[str, Any]:
        """``method`` on the backend for the caller of ``req``, its result shaped for the caller's era."""
        wait = self.breaker.retry_after()
        if self.breaker.is_open and wait > 0:
            return self._unavailable(f"the backend is unavailable ({self.breaker.last_error})", wait, req, tool)
        try:
            result = await self.asking.request(self._backend(), method, params, req)
            rounds = 0
            while (result.get("resultType") == "input_required" and req is not None and req.era is Era.LEGACY
                   and rounds < 10):
                rounds += 1  # a 2026-07-28 backend asks; a 2025 caller answers over its session
                answers = {}
                for k, ask in (result.get("inputRequests") or {}).items():
                    answers[k] = await req.outbound.request(ask.get("method"), ask.get("params"))
                again = {**params, "inputResponses": answers}
                if result.get("requestState") is not None:
                    again["requestState"] = result["requestState"]
                result = await self._backend().request(method, again, req, relay_to(req))
        except BackendUnavailable as exc:
            self.breaker.failure(str(exc))
            return self._unavailable(str(exc), self.breaker.retry_after() or 1.0, req, tool)
        except CredentialFailed as exc:  # refused before any request left
            if not tool:
                raise
            return tool_error_result(exc, (), req.request_id if req is not None else "")
        except McpError as exc:
            raise backend_error(exc) from None
        self.breaker.success()
        if isinstance(result.get("taskId"), str) and self.mount is not None:  # a task of the backend's
            result["taskId"] = self.task_prefix + result["taskId"]
        if req is not None and req.era is Era.LEGACY:
            for k in _DROP_LEGACY:
                result.pop(k, None)
            if tool:
                wrap_for_legacy(result)
        return result

    def _unavailable(self, why: str, wait: float, req: Inbound | None, tool: bool) -> dict[str, Any]:
        ms = max(int(wait * 1000), 1000)
        err = McpError(JsonRpcErrorCode.ServiceUnavailable, f"{self.url} is unavailable: {why}",
                       {"reason": "backend_unavailable", "retryAfterMs": ms,
                        "recovery": {"hint": f"The backend is down; try again in {ms // 1000} s."}})
        if not tool:
            raise err
        return tool_error_result(err, (), req.request_id if req is not None else "")
