"""The one way a definition is invoked: tools, prompts and resources plug in as families, and
each definition's steps are chosen once, in its :class:`Pipeline`.

For every ``tools/call``, ``prompts/get`` and ``resources/read`` the same steps run, in order:
the family finds the definition, the caller's scopes are checked, the arguments are validated
(one shape of bad-arguments error for all three), then, inside the family's telemetry span and
the input rounds of :mod:`.rounds`, each attempt builds a fresh ``Context``, calls the handler
and lets the family shape its value. A failure is classified and logged once, and the family
decides how it reaches the client: an ``isError`` result (tools) or a JSON-RPC error (the others).
A task's attempt (:mod:`mcpcore.tasks.attempt`) is one attempt of the same pipeline
(:meth:`Pipeline.once`), its ending classified by the task.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import ValidationError

from ..context import Context, Inbound
from ..context.inputs import InputRequired
from ..definitions.schema import ArgsPlan
from ..errors import ErrorContract, JsonRpcErrorCode, McpError, quoted
from .dependencies import Resolution, close_all
from .results import classify_and_log
from .rounds import run_rounds, unseal

if TYPE_CHECKING:
    from ..telemetry import Telemetry
    from .core import ServerCore

__all__ = ["PROTOCOL_ERRORS", "Family", "Invocable", "Pipeline", "invalid_arguments", "invoke", "span"]


class Invocable(Protocol):
    """What every definition the pipeline invokes has (tools, prompts, resources)."""

    @property
    def args(self) -> ArgsPlan: ...  # how its arguments are validated and passed
    @property
    def auth(self) -> Sequence[str]: ...  # the OAuth scopes a caller must hold
    @property
    def errors(self) -> Sequence[ErrorContract]: ...  # its declared failures (``errors=[...]``)
    @property
    def direct(self) -> Callable[..., Any] | None: ...  # the handler when it is a coroutine function
    @property
    def call(self) -> Callable[[dict[str, Any]], Awaitable[Any]]: ...  # the handler behind an async caller
    pipeline: Any  # its :class:`Pipeline` once built (``None`` before)


D = TypeVar("D", bound=Invocable)
Plain = tuple[tuple[str, Callable[..., Any], bool, str | None], ...]

# Errors about the request itself, not the definition's work: they reach the client as raised.
PROTOCOL_ERRORS = frozenset({JsonRpcErrorCode.MissingRequiredClientCapability, JsonRpcErrorCode.HeaderMismatch})
_MAX_ISSUES = 20


def invalid_arguments(message: str, hint: str, issues: list[dict[str, Any]] | None = None) -> McpError:
    """The one bad-arguments error: ``InvalidParams``, ``data.reason = "invalid_arguments"``, the
    family's recovery hint and, when known, ``data.issues`` (``[{"path", "message"}]``)."""
    data: dict[str, Any] = {"reason": "invalid_arguments", "recovery": {"hint": hint}}
    if issues:
        data["issues"] = issues
    return McpError(JsonRpcErrorCode.InvalidParams, message, data)


def _bad_type(family: Family[Any]) -> McpError:
    return invalid_arguments('"arguments" must be an object.', family.hint)


def _known(args: dict[str, Any], stray: set[str], family: Family[Any]) -> dict[str, Any]:
    """``args`` without keys that are not parameters: those starting with ``_`` are client
    artifacts and dropped; any other is an unknown argument."""
    extra = sorted(k for k in stray if not k.startswith("_"))
    if extra:
        shown = [quoted(k) for k in extra[:_MAX_ISSUES]]
        more = f" and {len(extra) - len(shown)} more" if len(extra) > len(shown) else ""
        raise invalid_arguments(f"Unknown argument(s): {quoted(', '.join(shown))}{more}.", family.hint,
                                [{"path": k, "message": f"not an argument of this {family.noun}"} for k in shown])
    return {k: v for k, v in args.items() if k not in stray}


def _invalid(exc: ValidationError, family: Family[Any]) -> McpError:
    issues = [{"path": quoted(".".join(str(p) for p in e["loc"])), "message": e["msg"]}
              for e in exc.errors(include_url=False, include_input=False)[:_MAX_ISSUES]]
    first = issues[0] if issues else {"path": "", "message": "invalid"}
    return invalid_arguments(f"Invalid arguments: {first['path'] or 'input'}: {first['message']}", family.hint, issues)


def _ignore(failed: bool) -> None:
    return None


@contextmanager
def span(tel: Telemetry, name: str, req: Inbound, attributes: dict[str, Any]) -> Iterator[Callable[[bool], None]]:
    """A plain execution span for :meth:`Family.observe` (the outcome is not reported)."""
    with tel.execution(name, req, attributes):
        yield _ignore


class Family(Generic[D]):
    """How one kind of definition plugs into :func:`invoke`. ``target`` is what the request
    names it by (a tool's or prompt's name, a resource's URI)."""

    noun = "definition"
    """What the definition is called in a bad-arguments issue."""
    hint = "Call it again with corrected arguments."
    """The recovery hint of a bad-arguments error."""

    def pipeline(self, d: D) -> Pipeline[D]:
        """``d``'s pipeline, built on its first use and kept on the definition."""
        pipe: Pipeline[D] | None = d.pipeline
        if pipe is None or pipe.family is not self:
            pipe = d.pipeline = Pipeline(self, d)
        return pipe

    def operation(self, d: D, target: str) -> str:
        """The operation name a ``Context`` reports and request state is sealed to."""
        raise NotImplementedError

    def label(self, d: D, target: str) -> str:
        """Where a failure happened, for the log."""
        return self.operation(d, target)

    def context(self, d: D, req: Inbound, operation: str, target: str) -> Context:
        """The ``Context`` one attempt receives."""
        return Context(req, operation=operation, errors=d.errors)

    def shape(self, d: D, value: Any, ctx: Context | None, req: Inbound, target: str) -> dict[str, Any]:
        """The method's result for the handler's return ``value``."""
        raise NotImplementedError

    def failed(self, d: D, err: McpError, req: Inbound) -> dict[str, Any]:
        """The answer to a classified failure: a result, or raise it as a JSON-RPC error."""
        raise err

    def observe(self, tel: Telemetry, d: D, req: Inbound, target: str) -> AbstractContextManager[
            Callable[[bool], None]]:
        """The telemetry span of one invocation; yields a function told whether it failed."""
        raise NotImplementedError


class Pipeline(Generic[D]):
    """How one definition is invoked, its steps chosen once from what it is: whether its handler
    takes a ``Context``, is awaited directly or through its caller, and has dependencies (all
    plain async ones, resolved without a resolution object, or not). Per request remain only
    what the request decides: telemetry on, request state (a later input round), overrides.

    :func:`invoke` runs it for a request (every round, failures answered by the family);
    :meth:`once` runs one attempt for a task, its ending left to the task to classify.
    """

    __slots__ = ("call", "ctx_param", "d", "direct", "family", "field_keys", "kwargs", "plain", "rest", "simple",
                 "validate_python")

    def __init__(self, family: Family[D], d: D) -> None:
        plan = d.args
        self.family = family
        self.d = d
        self.field_keys = plan.field_keys
        self.validate_python: Callable[[Any], Any] = plan.validator.validate_python
        self.kwargs: Callable[[Any], dict[str, Any]] = plan.kwargs
        self.direct = d.direct
        self.call = d.call
        self.ctx_param = plan.ctx_param
        self.plain: Plain | None = plan.plain_deps
        self.simple = not plan.deps  # no dependencies: the first attempt runs inline in invoke
        self.rest: Callable[[ServerCore, Any, Inbound, str], Awaitable[dict[str, Any]]] = \
            self.run if not plan.deps else self._with_dependencies if self.plain is None else self._dependencies

    def validate(self, args: Any) -> Any:
        """The validated arguments, or the one bad-arguments :class:`McpError` (invoke's, inline)."""
        family = self.family
        args = {} if args is None else args
        if type(args) is not dict:
            raise _bad_type(family)
        stray = args.keys() - self.field_keys
        if stray:
            args = _known(args, stray, family)
        try:
            return self.validate_python(args)
        except ValidationError as exc:
            raise _invalid(exc, family) from None

    async def attempt(self, validated: Any, req: Inbound, target: str,
                      resolved: dict[str, Any] | None = None) -> dict[str, Any]:
        """One call of the handler, with fresh arguments and context, its value shaped (the
        dependencies' values, ``resolved``, are the caller's)."""
        d, family = self.d, self.family
        kwargs = self.kwargs(validated)
        ctx: Context | None = None
        if self.ctx_param is not None:
            ctx = family.context(d, req, family.operation(d, target), target)
            kwargs[self.ctx_param] = ctx
        if resolved:
            kwargs.update(resolved)
        direct = self.direct
        value = await (direct(**kwargs) if direct is not None else self.call(kwargs))
        return family.shape(d, value, ctx, req, target)

    async def once(self, core: ServerCore, validated: Any, req: Inbound, target: str) -> dict[str, Any]:
        """One attempt resolving its own dependencies (a task's: it may run on another instance,
        long after the request that created it), under the family's telemetry span; raises what
        the handler raised, :class:`InputRequired` included."""
        tel = core.telemetry
        if tel is None:
            return await self._once(core, validated, req, target)
        with self.family.observe(tel, self.d, req, target) as report:
            try:
                result = await self._once(core, validated, req, target)
            except BaseException:
                report(True)
                raise
            report(bool(result.get("isError")))
            return result

    def _once(self, core: ServerCore, validated: Any, req: Inbound, target: str) -> Awaitable[dict[str, Any]]:
        return self.attempt(validated, req, target) if self.simple else self._resolution(core, req, target).around(
            self.d.args.deps, lambda resolved: self.attempt(validated, req, target, resolved))

    def _resolution(self, core: ServerCore, req: Inbound, target: str) -> Resolution:
        d, family = self.d, self.family
        return Resolution(lambda: family.context(d, req, family.operation(d, target), target),
                          core.dependency_overrides)

    def failure(self, exc: Exception, req: Inbound, target: str) -> dict[str, Any]:
        """A failed attempt, classified and logged once, answered as the family answers failures;
        errors about the request itself (:data:`PROTOCOL_ERRORS`) propagate as raised."""
        if isinstance(exc, McpError) and exc.code in PROTOCOL_ERRORS:
            raise exc
        d, family = self.d, self.family
        return family.failed(d, classify_and_log(exc, family.label(d, target), req.request_id), req)

    async def run(self, core: ServerCore, validated: Any, req: Inbound, target: str,
                  first: InputRequired | None = None) -> dict[str, Any]:
        """Every attempt and input round (``first``: the question a first attempt already asked);
        a failure answered by the family. Request state that does not verify is refused as raised."""
        operation = self.family.operation(self.d, target)
        if req.request_state is not None:
            unseal(core, req, operation)
        try:
            return await run_rounds(core, req, operation, lambda: self.attempt(validated, req, target), first)
        except Exception as exc:
            return self.failure(exc, req, target)

    def _dependencies(self, core: ServerCore, validated: Any, req: Inbound, target: str) -> Awaitable[dict[str, Any]]:
        """Plain async dependencies: the short path unless a later round or an override needs it."""
        if req.request_state is None and not core.dependency_overrides:
            return self._plain(core, validated, req, target, self.plain)  # type: ignore[arg-type]
        return self._with_dependencies(core, validated, req, target)

    async def _with_dependencies(self, core: ServerCore, validated: Any, req: Inbound, target: str) -> dict[str, Any]:
        """:meth:`run` for a definition with dependencies: resolved once for the request, their
        cleanup run after the last round with the handler's exception (or cancellation) thrown in."""
        operation = self.family.operation(self.d, target)
        if req.request_state is not None:
            unseal(core, req, operation)

        async def rounds(resolved: dict[str, Any]) -> dict[str, Any]:
            def again() -> Awaitable[dict[str, Any]]:
                return self.attempt(validated, req, target, resolved)
            if req.request_state is None:
                try:  # the common case: one round, inline
                    return await again()
                except InputRequired as sig:
                    return await run_rounds(core, req, operation, again, sig)
            return await run_rounds(core, req, operation, again)

        try:
            return await self._resolution(core, req, target).around(self.d.args.deps, rounds)
        except Exception as exc:
            return self.failure(exc, req, target)

    async def _plain(self, core: ServerCore, validated: Any, req: Inbound, target: str, plain: Plain) -> dict[str, Any]:
        """:meth:`_with_dependencies` for async functions and async generators taking at most the
        ``Context``, in the common first round: no resolution object, no frame per dependency."""
        d, family = self.d, self.family
        resolved: dict[str, Any] = {}
        gens: list[Any] = []
        ctx: Context | None = None
        try:
            try:
                for name, call, is_gen, ctx_param in plain:
                    if ctx_param is None:
                        made = call()
                    else:
                        if ctx is None:
                            ctx = family.context(d, req, family.operation(d, target), target)
                        made = call(**{ctx_param: ctx})
                    if is_gen:
                        try:
                            resolved[name] = await made.__anext__()
                        except StopAsyncIteration:
                            raise RuntimeError(f"dependency {getattr(call, '__qualname__', call)} did not yield") \
                                from None
                        gens.append(made)
                    else:
                        resolved[name] = await made
                try:
                    if self.ctx_param is None:  # no frame more for the handler
                        kwargs = self.kwargs(validated)
                        kwargs.update(resolved)
                        direct = self.direct
                        value = await (direct(**kwargs) if direct is not None else self.call(kwargs))
                        result = family.shape(d, value, None, req, target)
                    else:
                        result = await self.attempt(validated, req, target, resolved)
                except InputRequired as sig:
                    result = await run_rounds(core, req, family.operation(d, target),
                                              lambda: self.attempt(validated, req, target, resolved), sig)
            except BaseException as exc:
                if gens:
                    await close_all(gens, exc)
                raise
            while gens:  # cleanup after success, inline while each generator simply ends
                gen = gens.pop()
                try:
                    await gen.__anext__()
                except StopAsyncIteration:
                    continue
                await gen.aclose()
                await close_all(gens)
                raise RuntimeError("a dependency yielded more than once")
            return result
        except Exception as exc:
            return self.failure(exc, req, target)

    async def observed(self, core: ServerCore, validated: Any, req: Inbound, target: str,
                       tel: Telemetry) -> dict[str, Any]:
        """The invocation inside the family's telemetry span."""
        with self.family.observe(tel, self.d, req, target) as report:
            try:
                if self.simple and req.request_state is None:
                    result = await self._first(core, validated, req, target)
                else:
                    result = await self.rest(core, validated, req, target)
            except BaseException:
                report(True)
                raise
            report(bool(result.get("isError")))
            return result

    async def _first(self, core: ServerCore, validated: Any, req: Inbound, target: str) -> dict[str, Any]:
        """:func:`invoke`'s common case for :meth:`observed` (``invoke`` keeps it inline, so a
        call that nothing observes costs no coroutine more)."""
        try:
            if self.ctx_param is not None:
                return await self.attempt(validated, req, target)
            direct, kwargs = self.direct, self.kwargs(validated)
            value = await (direct(**kwargs) if direct is not None else self.call(kwargs))
            return self.family.shape(self.d, value, None, req, target)
        except InputRequired as sig:
            first = sig
        except Exception as exc:
            return self.failure(exc, req, target)
        return await self.run(core, validated, req, target, first)


async def invoke(core: ServerCore, pipe: Pipeline[Any], args: Any, req: Inbound, target: str) -> dict[str, Any]:
    """Invoke ``pipe``'s definition (found for ``target``) with the request's raw ``args``.

    Every ``tools/call`` passes here, so the common case (no telemetry, no dependencies, no
    request state, a first attempt that asks nothing) runs in this one coroutine, the arguments
    validated inline as :meth:`Pipeline.validate` does; the rest in the pipeline's steps."""
    d = pipe.d
    if d.auth:
        core.check_scopes(d.auth, req)
    if args is None:
        args = {}
    try:
        if type(args) is not dict:
            raise _bad_type(pipe.family)
        stray = args.keys() - pipe.field_keys
        if stray:
            args = _known(args, stray, pipe.family)
        validated = pipe.validate_python(args)
    except ValidationError as exc:
        return pipe.family.failed(d, _invalid(exc, pipe.family), req)
    except McpError as err:
        return pipe.family.failed(d, err, req)
    tel = core.telemetry
    if tel is not None:
        return await pipe.observed(core, validated, req, target, tel)
    if not pipe.simple or req.request_state is not None:
        return await pipe.rest(core, validated, req, target)
    try:
        if pipe.ctx_param is not None:
            return await pipe.attempt(validated, req, target)
        direct = pipe.direct
        value = await (direct(**pipe.kwargs(validated)) if direct is not None else pipe.call(pipe.kwargs(validated)))
        return pipe.family.shape(d, value, None, req, target)
    except InputRequired as sig:
        first = sig
    except Exception as exc:
        return pipe.failure(exc, req, target)
    return await pipe.run(core, validated, req, target, first)
