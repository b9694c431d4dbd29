"""``Middleware``: a layer around the methods a client calls, and the ``Call`` it sees.

A layer overrides only the hooks it needs; each is ``async def hook(self, call, call_next)``.
For one message, a layer's general hook (``on_request`` or ``on_notification``) runs first, then
its method's hook (``on_call_tool`` for ``tools/call``, ...), then the next layer's. The chain
of every method is put together once per app, and hooks a layer does not override are not in it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..context import Context, Inbound
from ..layer import Layer
from ..protocol.methods import BY_NAME, METHODS
from ..server.visibility import named_definition

if TYPE_CHECKING:
    from ..server.core import ServerCore

__all__ = ["HOOKS", "Call", "CallNext", "Middleware", "overridden"]

HOOKS: dict[str, str] = {m.name: m.hook for m in METHODS if m.hook is not None}
"""The method each per-method hook wraps."""


class Call:
    """One message on its way through the layers.

    ``method`` and ``params`` are the request's (a layer may change ``params``, or replace it,
    before ``call_next``); ``ctx`` is the request's :class:`~mcpcore.Context` (identity, tenant,
    session, ``log``, ``state``, ``values``); ``definition`` what it calls.
    """

    __slots__ = ("_core", "_ctx", "_req", "method", "params")

    def __init__(self, method: str, params: dict[str, Any], req: Inbound, core: ServerCore | None = None) -> None:
        self.method = method
        self.params = params
        self._req = req
        self._ctx: Context | None = None
        self._core = core

    @property
    def ctx(self) -> Context:
        """The request's context (values set on it reach the handler's context)."""
        ctx = self._ctx
        if ctx is None:
            ctx = self._ctx = Context(self._req, operation=self.method)
        return ctx

    @property
    def name(self) -> str | None:
        """What the call names: the tool or prompt (``params.name``) or the resource
        (``params.uri``); ``None`` for other methods."""
        m = BY_NAME.get(self.method)
        value = self.params.get(m.names_by if m is not None and m.names_by is not None and m.names is not None
                                else "name")
        return value if type(value) is str else None

    @property
    def definition(self) -> Any:
        """The tool, prompt or resource (or template) the call names, when it exists and the
        caller may see it; ``None`` for any other name (the caller chose it) or method."""
        core = self._core
        name = self.name
        if core is None or name is None:
            return None
        return named_definition(core, self.method, name, self._req)

    @property
    def request_id(self) -> str:
        """The request's id as the logs show it (``""`` for a notification)."""
        return self._req.request_id if self._req.jsonrpc_id is not None else ""

    def __repr__(self) -> str:
        return f"Call(method={self.method!r}, name={self.name!r})"


CallNext = Callable[[Call], Awaitable[Any]]
"""What a hook calls to run the rest of the chain; returns the method's result (a JSON-ready
dict for a request, ``None`` for a notification)."""


class Middleware(Layer):
    """The base of a middleware layer: override the hooks you need (and ``startup`` /
    ``shutdown`` for what the layer opens for the app's lifetime).

    Example::

        class Timing(Middleware):
            async def on_call_tool(self, call, call_next):
                started = time.perf_counter()
                result = await call_next(call)
                call.ctx.log.info("timed", elapsed_ms=(time.perf_counter() - started) * 1000)
                return result

        app = McpApp("demo", middleware=[Timing()])

    A hook may change ``call.params`` before ``call_next``, change the result after it, answer
    without calling it, or raise: an exception becomes the method's usual error (an ``isError``
    result for ``tools/call``, a JSON-RPC error elsewhere). ``ctx.request_input`` in a handler
    passes through the layers: they see its ``input_required`` answer as a result.
    """

    kind = "middleware"

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        """Every request."""
        return await call_next(call)

    async def on_notification(self, call: Call, call_next: CallNext) -> Any:
        """Every notification from the client (``notifications/initialized``, ``.../cancelled``, ...)."""
        return await call_next(call)

    async def on_initialize(self, call: Call, call_next: CallNext) -> Any:
        """``initialize`` (2025 era)."""
        return await call_next(call)

    async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
        """``tools/call``."""
        return await call_next(call)

    async def on_read_resource(self, call: Call, call_next: CallNext) -> Any:
        """``resources/read``."""
        return await call_next(call)

    async def on_get_prompt(self, call: Call, call_next: CallNext) -> Any:
        """``prompts/get``."""
        return await call_next(call)

    async def on_list_tools(self, call: Call, call_next: CallNext) -> Any:
        """``tools/list``: the result's ``tools`` may be filtered or changed."""
        return await call_next(call)

    async def on_list_resources(self, call: Call, call_next: CallNext) -> Any:
        """``resources/list``."""
        return await call_next(call)

    async def on_list_resource_templates(self, call: Call, call_next: CallNext) -> Any:
        """``resources/templates/list``."""
        return await call_next(call)

    async def on_list_prompts(self, call: Call, call_next: CallNext) -> Any:
        """``prompts/list``."""
        return await call_next(call)

    async def on_complete(self, call: Call, call_next: CallNext) -> Any:
        """``completion/complete``."""
        return await call_next(call)

    async def on_subscribe(self, call: Call, call_next: CallNext) -> Any:
        """``resources/subscribe`` (2025 era)."""
        return await call_next(call)

    async def on_unsubscribe(self, call: Call, call_next: CallNext) -> Any:
        """``resources/unsubscribe`` (2025 era)."""
        return await call_next(call)

    async def on_listen(self, call: Call, call_next: CallNext) -> Any:
        """``subscriptions/listen`` (2026-07-28); ``call_next`` returns when the stream ends."""
        return await call_next(call)


Hook = Callable[[Call, CallNext], Awaitable[Any]]


def overridden(layer: Middleware, hook: str) -> Hook | None:
    """``layer``'s ``hook`` when its class overrides the base's pass-through, else ``None``."""
    if getattr(type(layer), hook, None) is getattr(Middleware, hook):
        return None
    found: Hook = getattr(layer, hook)
    return found
