"""The dispatcher: one JSON-RPC request in, one response out, for either era.

This is the one place where exceptions become JSON-RPC errors. Handlers never see HTTP; the
transport supplies a :class:`~mcpcore.context.Inbound` and writes what comes back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .. import _json
from ..auth.scopes import check_scopes
from ..config import Settings
from ..context import ContextServices, Inbound
from ..definitions.resources import CacheHint
from ..errors import ErrorContract, JsonRpcErrorCode, McpError, classify
from ..logs import LEVELS, normalize_level
from ..protocol.extensions import APP_MIME_TYPE, APPS
from ..protocol.jsonrpc import error_response, result_response
from ..protocol.limits import check_params, clip
from ..protocol.pagination import page
from ..protocol.versions import (
    META_SERVER_INFO,
    MODERN_VERSIONS,
    Era,
    negotiate,
)
from ..security.sealing import RequestStateSealer
from . import prompts as prompt_methods
from . import resources as resource_methods
from .closing import Closing
from .listen import listen
from .notify import Notifier
from .registry import Registry
from .results import error_payload
from .tools import call_tool

__all__ = ["Dispatcher"]

log = logging.getLogger("mcpcore.server")

Handler = Callable[["Dispatcher", dict[str, Any], Inbound], Awaitable[Any]]

CACHEABLE = ("server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
             "resources/read")


def _normalize_capabilities(caps: Any) -> dict[str, Any]:
    """The 2025-era view of client capabilities: a bare ``elicitation: {}`` means form mode."""
    if type(caps) is not dict:
        return {}
    out = dict(caps)
    el = out.get("elicitation")
    if type(el) is dict and not el:
        out["elicitation"] = {"form": {}}
    return out


class Dispatcher:
    """Routes methods to handlers and shapes results and errors for the request's era."""

    def __init__(
        self,
        *,
        registry: Registry,
        settings: Settings,
        server_info: dict[str, Any],
        instructions: str | None,
        services: ContextServices,
        notifier: Notifier,
        cache_hints: dict[str, CacheHint] | None = None,
        sessions: Any = None,
        sealer: RequestStateSealer | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.server_info = server_info
        self.instructions = instructions
        self.services = services
        self.notifier = notifier
        self.sessions = sessions
        self.sealer = sealer
        self.telemetry: Any = None
        self.cache_hints = {m: CacheHint(0, "private") for m in CACHEABLE}
        self.cache_hints.update(cache_hints or {})
        self.closing = Closing()
        self.extensions: dict[str, dict[str, Any]] = dict(extensions or {})
        """Extensions this server declares under ``capabilities.extensions`` (id -> settings)."""
        self._caps: tuple[int, dict[str, Any]] | None = None
        self._server_meta = {META_SERVER_INFO: server_info}
        self._list_cache: dict[tuple[Era, str, Any], bytes] = {}
        self._served: dict[Era, dict[str, bool]] = {Era.LEGACY: {}, Era.MODERN: {}}
        registry.on_change(self._invalidate)
        self._legacy: dict[str, Handler] = {
            "initialize": Dispatcher._initialize,
            "ping": Dispatcher._ping,
            "logging/setLevel": Dispatcher._set_level,
            "resources/subscribe": resource_methods.subscribe,
            "resources/unsubscribe": resource_methods.unsubscribe,
        }
        self._common: dict[str, Handler] = {
            "tools/call": call_tool,
            "resources/read": resource_methods.read_resource,
            "prompts/get": prompt_methods.get_prompt,
            "completion/complete": prompt_methods.complete,
        }
        self._lists = {"tools/list", "prompts/list", "resources/list", "resources/templates/list"}
        self._modern: dict[str, Handler] = {
            "server/discover": Dispatcher._discover,
            "subscriptions/listen": listen,
        }
        self._gates = {
            "tools/list": "tools", "tools/call": "tools",
            "prompts/list": "prompts", "prompts/get": "prompts",
            "resources/list": "resources", "resources/templates/list": "resources", "resources/read": "resources",
            "resources/subscribe": "resources", "resources/unsubscribe": "resources",
            "completion/complete": "completions",
        }

    # -- capabilities -------------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """Server capabilities that match what is registered."""
        cached = self._caps
        if cached is not None and cached[0] == self.registry.version:
            return cached[1]
        caps = self._capabilities()
        self._caps = (self.registry.version, caps)
        return caps

    def _capabilities(self) -> dict[str, Any]:
        r = self.registry
        caps: dict[str, Any] = {"logging": {}}
        if r.prompts or r.templates:
            caps["completions"] = {}
        if r.prompts:
            caps["prompts"] = {"listChanged": True}
        if r.resources or r.templates:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if r.tools:
            caps["tools"] = {"listChanged": True}
        extensions = dict(self.extensions)
        if APPS not in extensions and any(t.app is not None for t in r.tools.values()):
            extensions[APPS] = {"mimeTypes": [APP_MIME_TYPE]}
        if extensions:
            caps["extensions"] = extensions
        return caps

    def add_method(self, method: str, handler: Handler, *, gate: str | None = None,
                   cache_hint: CacheHint | None = None) -> None:
        """Serve an extension's ``method`` on both eras (``gate``: the server capability it
        needs). With ``cache_hint`` its 2026-07-28 results carry ``ttlMs``/``cacheScope``."""
        self._common[method] = handler
        if gate is not None:
            self._gates[method] = gate
        if cache_hint is not None:
            self.cache_hints.setdefault(method, cache_hint)
        self._caps = None
        self._invalidate("methods")

    def declare_extension(self, ext_id: str, settings: dict[str, Any]) -> None:
        """Add ``ext_id`` to the capabilities this server declares."""
        self.extensions[ext_id] = settings
        self._caps = None

    def _invalidate(self, kind: str) -> None:
        self._list_cache.clear()
        self._served[Era.LEGACY].clear()
        self._served[Era.MODERN].clear()

    # -- entry points -------------------------------------------------------------------------

    def supports(self, method: str, era: Era) -> bool:
        """Whether ``method`` is served on ``era`` with the registered capabilities."""
        served = self._served[era]
        known = served.get(method)
        if known is None:
            known = self._supports(method, era)
            if len(served) < 256:  # methods are client-chosen strings: keep the memo bounded
                served[method] = known
        return known

    def _supports(self, method: str, era: Era) -> bool:
        if era is Era.LEGACY:
            known = method in self._legacy or method in self._common or method in self._lists
        else:
            known = method in self._modern or method in self._common or method in self._lists
        if not known:
            return False
        gate = self._gates.get(method)
        return gate is None or gate in self.capabilities()

    async def handle(self, msg: dict[str, Any], req: Inbound, *, supported: bool = False) -> bytes:
        """Serve one request; always returns a serialised response (result or error).
        ``supported``: the caller already checked that the method is served on this era."""
        rid = msg["id"]
        method = msg["method"]
        params = msg.get("params") or {}
        try:
            if not supported and not self.supports(method, req.era):
                raise McpError(JsonRpcErrorCode.MethodNotFound, f"Method not found: {clip(method)}")
            if req.check_sizes:
                check_params(method, params, req.progress_token)
            if method in self._lists:
                return await self._list(rid, method, params, req)
            handler = self._common.get(method) or (self._legacy if req.era is Era.LEGACY else self._modern)[method]
            result = await handler(self, params, req)
            if req.era is Era.MODERN:
                result = self._modern_result(method, result)
            return result_response(rid, result)
        except McpError as exc:
            req.error_code = exc.code
            req.error_data = exc.data
            return error_response(rid, error_payload(exc, (), req.request_id))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            err = classify(exc)
            req.error_code = err.code
            log.error("Unhandled error in %s", method, exc_info=exc, extra={"fields": {"requestId": req.request_id}})
            return error_response(rid, error_payload(err, (), req.request_id))

    def wire_error(self, err: McpError, contracts: Sequence[ErrorContract]) -> McpError:
        """A copy of ``err`` with the declared recovery hint filled (the original is untouched)."""
        payload = error_payload(err, contracts, "")
        data = payload["data"]
        data.pop("requestId", None)
        return McpError(err.code, err.message, data or None)

    def _modern_result(self, method: str, result: dict[str, Any]) -> dict[str, Any]:
        result.setdefault("resultType", "complete")
        meta = result.get("_meta")
        result["_meta"] = {**meta, META_SERVER_INFO: self.server_info} if meta else self._server_meta
        if method in self.cache_hints and result["resultType"] == "complete" and "ttlMs" not in result:
            hint = self.cache_hints[method]
            result["ttlMs"] = hint.ttl_ms
            result["cacheScope"] = hint.scope
        return result

    # -- lists ----------------------------------------------------------------------------------

    async def _list(self, rid: Any, method: str, params: dict[str, Any], req: Inbound) -> bytes:
        cursor = params.get("cursor")
        key = (req.era, method, cursor)
        dynamic = method == "resources/list" and any(t.list_call for t in self.registry.templates)
        cached = None if dynamic else self._list_cache.get(key)
        if cached is None:
            size = self.settings.list_page_size
            r = self.registry
            if method == "tools/list":
                modern = req.era is Era.MODERN
                items, nxt = page([t.to_wire(modern) for t in r.tools.values()], cursor, size)
                result: dict[str, Any] = {"tools": list(items)}
            elif method == "prompts/list":
                items, nxt = page([p.to_wire() for p in r.prompts.values()], cursor, size)
                result = {"prompts": list(items)}
            elif method == "resources/templates/list":
                items, nxt = page([t.template_listing() for t in r.templates], cursor, size)
                result = {"resourceTemplates": list(items)}
            else:
                items, nxt = page(await resource_methods.all_resources(self, req), cursor, size)
                result = {"resources": list(items)}
            if nxt is not None:
                result["nextCursor"] = nxt
            if req.era is Era.MODERN:
                result = self._modern_result(method, result)
            cached = _json.dumps(result)
            if not dynamic and len(self._list_cache) < 1024:
                self._list_cache[key] = cached
        return result_response(rid, cached)

    # -- lifecycle ------------------------------------------------------------------------------

    async def _initialize(self, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        version = negotiate(params.get("protocolVersion"))
        caps = _normalize_capabilities(params.get("capabilities"))
        info = params.get("clientInfo") if type(params.get("clientInfo")) is dict else None
        limit = self.settings.max_client_metadata_bytes
        if len(_json.dumps(caps)) + (len(_json.dumps(info)) if info else 0) > limit:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"capabilities and clientInfo exceed {limit} bytes.",
                           {"reason": "too_large", "limit": limit})
        req.protocol_version = version
        req.client_capabilities = caps
        req.client_info = info
        session = req.session
        if session is not None:
            session.protocol_version = version
            session.client_capabilities = caps
            session.client_info = info
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": self.server_info,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    async def _ping(self, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        return {}

    async def _set_level(self, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        raw = params.get("level")
        level = normalize_level(raw) if type(raw) is str else None
        if level is None or raw != level:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"Invalid log level: {raw!r}",
                           {"supported": list(LEVELS)})
        session = req.session
        if session is not None:
            session.log_level = level
            await self.save_session(session)
        req.client_log_level = LEVELS[level]
        return {}

    async def _discover(self, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        result: dict[str, Any] = {"supportedVersions": list(MODERN_VERSIONS), "capabilities": self.capabilities()}
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    # -- helpers used by method modules ---------------------------------------------------------

    async def save_session(self, session: Any) -> None:
        if self.sessions is not None:
            await self.sessions.save(session)

    def check_scopes(self, required: Sequence[str], req: Inbound) -> None:
        """Fail closed when a definition requires scopes the caller does not hold (checked
        before its input is parsed); the client is never told which scopes were missing."""
        if not required:
            return
        try:
            check_scopes(req.auth, required, auth_mode=self.settings.auth_mode,
                         disabled=self.settings.auth_disable_scope_checks)
        except McpError as exc:
            raise McpError(exc.code, exc.message, {"reason": "insufficient_scope"}) from None
