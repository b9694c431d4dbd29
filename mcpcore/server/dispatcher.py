"""The dispatcher: one JSON-RPC request in, one response out, for either era.

This is the one place where exceptions become JSON-RPC errors. Handlers never see HTTP; the
transport supplies a :class:`~mcpcore.context.Inbound` and writes what comes back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..config import Settings
from ..context import ContextServices, Inbound
from ..context.inputs import InputRequired
from ..definitions.resources import CacheHint
from ..errors import JsonRpcErrorCode, McpError, MethodError, classify, quoted
from ..metrics import count_error
from ..middleware.base import Call, Middleware
from ..protocol.jsonrpc import error_response, result_response
from ..protocol.limits import check_params
from ..protocol.methods import BY_NAME, LIST_METHODS, METHODS
from ..protocol.outcome import ErrorAnswer, error_class
from ..protocol.versions import ERA_MODERN, META_SERVER_INFO, Era
from ..security.sealing import RequestStateSealer
from . import lifecycle
from . import prompts as prompt_methods
from . import resources as resource_methods
from .chain import Layers, Step, tools_call_step
from .closing import Closing
from .completion import complete
from .core import Handler, ServerCore
from .family import known_arguments, not_an_object, validation_failed
from .invoke import Pipeline
from .listen import listen
from .lists import Lists
from .notify import Notifier
from .registry import Registry
from .results import classify_and_log, tool_error_result
from .tools import TOOLS, call_tool

if TYPE_CHECKING:
    from ..sessions.base import SessionStore
    from ..telemetry import Telemetry

__all__ = ["Dispatcher"]

log = logging.getLogger("mcpcore.server")

CACHEABLE = tuple(m.name for m in METHODS if m.cached)


class Dispatcher:
    """Routes methods to handlers and shapes results and errors for the request's era.

    Handlers receive :attr:`core` (a :class:`~mcpcore.server.core.ServerCore`), never the
    dispatcher; the dispatcher's own attributes of the same names are that core's parts.
    """

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
        sessions: SessionStore | None = None,
        sealer: RequestStateSealer | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.core = ServerCore(registry=registry, settings=settings, notifier=notifier, server_info=server_info,
                               instructions=instructions, sessions=sessions, sealer=sealer, extensions=extensions)
        """What the method handlers see."""
        self.core.telemetry = telemetry
        self.registry = registry
        self.server_info = server_info
        self.services = services
        self.notifier = notifier
        self.closing: Closing = self.core.closing
        self.cache_hints = {m: CacheHint(0, "private") for m in CACHEABLE}
        self.cache_hints.update(cache_hints or {})
        self._server_meta = {META_SERVER_INFO: server_info}
        self.lists = Lists(self.core, self._modern_result)
        self.layers: Layers | None = None
        """The app's middleware (``None``: none)."""
        self._middleware: tuple[Middleware, ...] = ()
        self._steps: dict[str, Step] | None = None
        self._served: dict[Era, dict[str, bool]] = {Era.LEGACY: {}, Era.MODERN: {}}
        self._inline: dict[str, Pipeline[Any] | None] = {}
        self._with_deps: dict[str, Pipeline[Any] | None] = {}
        """Per tool name seen: its pipeline when :meth:`handle` runs the call inline, else ``None``."""
        registry.on_change(self._invalidate)
        self._handlers: dict[str, Handler] = {
            "initialize": lifecycle.initialize,
            "ping": lifecycle.ping,
            "logging/setLevel": lifecycle.set_level,
            "server/discover": lifecycle.discover,
            "tools/call": call_tool,
            "prompts/get": prompt_methods.get_prompt,
            "resources/read": resource_methods.read_resource,
            "resources/subscribe": resource_methods.subscribe,
            "resources/unsubscribe": resource_methods.unsubscribe,
            "completion/complete": complete,
            "subscriptions/listen": listen,
        }
        """Each method's handler (the list methods are :attr:`lists`')."""
        self._lists = LIST_METHODS
        self._eras: dict[str, Era | None] = {name: BY_NAME[name].era for name in (*self._handlers, *LIST_METHODS)}
        """The era serving each method (``None``: both), from the method table."""
        self._gates = {m.name: m.gate for m in METHODS if m.gate is not None}

    @property
    def telemetry(self) -> Telemetry | None:
        """Spans and metrics of the handlers (``None``: off)."""
        return self.core.telemetry

    @telemetry.setter
    def telemetry(self, value: Telemetry | None) -> None:
        self.core.telemetry = value

    @property
    def sealer(self) -> RequestStateSealer | None:
        """Seals the request state handlers hand to ``ctx.request_input`` (``None``: unsigned)."""
        return self.core.sealer

    @property
    def sessions(self) -> SessionStore | None:
        """Where 2025-era sessions are saved after a handler changed them."""
        return self.core.sessions

    @property
    def instructions(self) -> str | None:
        """The server's instructions for the model."""
        return self.core.instructions

    @property
    def extensions(self) -> dict[str, dict[str, Any]]:
        """Extensions this server declares under ``capabilities.extensions`` (id -> settings)."""
        return self.core.extensions

    # -- capabilities -------------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """Server capabilities that match what is registered."""
        return self.core.capabilities()

    def add_method(self, method: str, handler: Handler, *, gate: str | None = None,
                   cache_hint: CacheHint | None = None, era: Era | None = None) -> None:
        """Serve an extension's ``method`` on both eras, or only on ``era`` (``gate``: the server
        capability it needs). With ``cache_hint`` its 2026-07-28 results carry ``ttlMs``/``cacheScope``."""
        self._handlers[method] = handler
        self._eras[method] = era
        if gate is not None:
            self._gates[method] = gate
        if cache_hint is not None:
            self.cache_hints.setdefault(method, cache_hint)
        self.core.forget_capabilities()
        self._invalidate("methods")
        if self._middleware:
            self.use(self._middleware)

    def declare_extension(self, ext_id: str, settings: dict[str, Any]) -> None:
        """Add ``ext_id`` to the capabilities this server declares."""
        self.core.declare_extension(ext_id, settings)

    def declare(self, kind: str) -> None:
        """Serve ``kind``'s methods (``tools``, ``prompts``, ``resources``) while none is registered."""
        self.core.declare(kind)
        self._invalidate(kind)

    def use(self, middleware: Sequence[Middleware]) -> None:
        """Serve every method through ``middleware`` (the first outermost); ``[]`` for none."""
        self._middleware = tuple(middleware)
        methods = {*self._handlers, *self._lists}
        self.layers = Layers(middleware, self._innermost, methods) if middleware else None
        self._steps = self.layers.steps if self.layers is not None else None
        self._inline.clear()
        self._with_deps.clear()

    def _invalidate(self, kind: str) -> None:
        self.lists.invalidate()
        self._inline.clear()
        self._with_deps.clear()
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
        if method not in self._eras:
            return False
        serving = self._eras[method]
        if serving is not None and serving is not era:
            return False
        gate = self._gates.get(method)
        return gate is None or gate in self.capabilities()

    async def handle(self, msg: dict[str, Any], req: Inbound, *, supported: bool = False) -> bytes:
        """Serve one request; always returns a serialised response: the result's ``bytes``, or
        an :class:`~mcpcore.protocol.outcome.ErrorAnswer` (``bytes`` too) carrying the class of
        its error, which an HTTP transport reads to choose the status.
        ``supported``: the caller already checked that the method is served on this era."""
        rid = msg["id"]
        method = msg["method"]
        params = msg.get("params") or {}
        try:
            if not supported and not self.supports(method, req.era):
                raise McpError(JsonRpcErrorCode.MethodNotFound, f"Method not found: {quoted(method)}")
            if req.check_sizes:
                check_params(method, params, req.progress_token)
            steps = self._steps
            if steps is not None and (step := steps.get(method)) is not None:
                call = Call(method, params, req, self.core)
                try:
                    result = await step(call)
                except MethodError:  # the method's own error, through the layers
                    raise
                except Exception as exc:  # a layer's own failure in tools/call is the tool's error result
                    if method != "tools/call":
                        raise
                    result = tool_error_result(classify_and_log(exc, "middleware of tools/call", req.request_id),
                                               (), req.request_id)
                if type(result) is not dict:
                    raise McpError(JsonRpcErrorCode.InternalError, f"A middleware layer answered {quoted(method)} "
                                   f"with {type(result).__name__}, not a result object.")
            elif method in self._lists:
                return await self.lists.answer(rid, method, params, req)
            elif method == "tools/call" and type(name := params.get("name")) is str and \
                    (pipe := self._inline.get(name)) and req.request_state is None and self.core.telemetry is None:
                # invoke's common case for a plain tool, in this coroutine (no call_tool, no invoke frame)
                d = pipe.d
                if d.auth:
                    self.core.check_scopes(d.auth, req)
                args = params.get("arguments")
                if args is None:
                    args = {}
                first: InputRequired | None = None
                try:
                    if type(args) is not dict:
                        raise not_an_object(pipe.family)
                    if not pipe.covers(args):
                        args = known_arguments(args, args.keys() - pipe.field_keys, pipe.family)
                    validated = pipe.validate_python(args)
                except ValidationError as exc:
                    result = pipe.family.failed(d, validation_failed(exc, pipe.family), req)
                except McpError as bad:
                    result = pipe.family.failed(d, bad, req)
                else:
                    try:
                        direct = pipe.direct
                        value = await (direct(**pipe.kwargs(validated)) if direct is not None else
                                       pipe.call(pipe.kwargs(validated)))
                        result = pipe.shape(value, None, req, name)
                    except InputRequired as sig:
                        first = sig
                    except Exception as exc:
                        result = pipe.failure(exc, req, name)
                    if first is not None:
                        result = await pipe.run(self.core, validated, req, name, first)
            else:
                result = await self._handlers[method](self.core, params, req)
                if method == "tools/call" and type(name := params.get("name")) is str and name not in self._inline:
                    self._learn(name)
            if req.era is ERA_MODERN:
                result = self._modern_result(method, result)
            return result_response(rid, result)
        except McpError as exc:
            count_error(exc.code)
            return ErrorAnswer(error_response(rid, exc.to_wire(req.request_id)), error_class(exc))
        except asyncio.CancelledError:
            raise
        except (Exception, InputRequired) as exc:  # InputRequired: asked where no input round runs
            err = classify(exc)
            count_error(err.code)
            log.error("Unhandled error in %s", method, exc_info=exc, extra={"fields": {"requestId": req.request_id}})
            return ErrorAnswer(error_response(rid, err.to_wire(req.request_id)), error_class(err))

    def _learn(self, name: str) -> None:
        """Remember whether the tool ``name`` is called inline by :meth:`handle` (after a first
        call built its pipeline): when :func:`~mcpcore.server.tools.call_tool` would invoke it
        and :func:`~mcpcore.server.invoke.invoke` would take its common case, no dependencies
        and no ``Context`` (telemetry and request state are the request's, checked per call).
        A tool with dependencies is remembered too (:attr:`_with_deps`): under middleware the
        innermost layer validates its arguments and runs its pipeline's dependency steps without
        ``call_tool`` and ``invoke`` in between. Forgotten when the registry or the methods change."""
        if len(self._inline) >= 1024 or self._handlers["tools/call"] is not call_tool:
            return
        tool = self.registry.tools.get(name)
        if tool is None:
            return
        pipe = tool.pipeline
        plain = tool.visible_to is None and tool.forward is None and tool.task is None and \
            type(pipe) is Pipeline and pipe.family is TOOLS
        self._inline[name] = pipe if plain and pipe.simple and pipe.ctx_param is None else None
        self._with_deps[name] = pipe if plain and not pipe.simple else None

    def _modern_result(self, method: str, result: dict[str, Any]) -> dict[str, Any]:
        result.setdefault("resultType", "complete")
        meta = result.get("_meta")
        result["_meta"] = {**meta, META_SERVER_INFO: self.server_info} if meta else self._server_meta
        if method in self.cache_hints and result["resultType"] == "complete" and "ttlMs" not in result:
            hint = self.cache_hints[method]
            result["ttlMs"] = hint.ttl_ms
            result["cacheScope"] = hint.scope
        return result

    # -- middleware ---------------------------------------------------------------------------

    def _innermost(self, method: str) -> Step:
        """``method`` itself, as the innermost layer calls it (the method's own awaitable, no
        frame in between)."""
        if method in self._lists:
            lists = self.lists
            return lambda call: lists.fresh(method, call.params, call._req)
        handler = self._handlers[method]
        core = self.core
        if method == "tools/call":
            return tools_call_step(handler, core, self._with_deps, self._learn)
        return lambda call: handler(core, call.params, call._req)

    @property
    def hooks_notifications(self) -> bool:
        """Whether a middleware layer hooks client notifications."""
        return self.layers is not None and self.layers.hooks_notifications

    async def notification(self, msg: dict[str, Any], req: Inbound,
                           handling: Callable[[], Awaitable[None] | None]) -> None:
        """A client notification through the layers' ``on_notification`` hooks, then the
        transport's own ``handling``. A layer that raises ends it (notifications get no answer)."""
        layers = self.layers
        if layers is None or not layers.hooks_notifications:
            done = handling()
            if done is not None:
                await done
            return

        async def inner(call: Call) -> None:
            done = handling()
            if done is not None:
                await done

        params = msg.get("params")
        call = Call(msg["method"], params if type(params) is dict else {}, req, self.core)
        try:
            await layers.notification(inner)(call)
        except Exception:
            log.warning("a middleware layer failed on %s", quoted(msg["method"]), exc_info=True)
