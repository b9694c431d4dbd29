"""The one way a definition is invoked: tools, prompts and resources plug in as families.

For every ``tools/call``, ``prompts/get`` and ``resources/read`` the same steps run, in order:
the family finds the definition, the caller's scopes are checked, the arguments are validated
(one shape of bad-arguments error for all three), then, inside the family's telemetry span and
the input rounds of :mod:`.rounds`, each attempt builds a fresh ``Context``, calls the handler
and lets the family shape its value. A failure is classified and logged once, and the family
decides how it reaches the client: an ``isError`` result (tools) or a JSON-RPC error (the others).
"""

from __future__ import annotations

import functools
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

__all__ = ["PROTOCOL_ERRORS", "Family", "Invocable", "invalid_arguments", "invoke", "span", "validated_arguments"]


class Invocable(Protocol):
    """What every definition the pipeline invokes has (tools, prompts, resources)."""

    @property
    def args(self) -> ArgsPlan:
        """How its arguments are validated and passed."""

    @property
    def auth(self) -> Sequence[str]:
        """The OAuth scopes a caller must hold."""

    @property
    def errors(self) -> Sequence[ErrorContract]:
        """Its declared failures (``errors=[...]``)."""

    @property
    def direct(self) -> Callable[..., Any] | None:
        """The handler itself when it is a coroutine function (awaited without a wrapper)."""

    @property
    def call(self) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        """The handler behind an async caller (a sync one runs in a worker thread)."""


D = TypeVar("D", bound=Invocable)

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


def _issues(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"path": quoted(".".join(str(p) for p in e["loc"])), "message": e["msg"]}
            for e in exc.errors(include_url=False, include_input=False)[:_MAX_ISSUES]]


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
    issues = _issues(exc)
    first = issues[0] if issues else {"path": "", "message": "invalid"}
    return invalid_arguments(f"Invalid arguments: {first['path'] or 'input'}: {first['message']}", family.hint, issues)


def validated_arguments(family: Family[D], d: D, args: Any) -> Any:
    """``d``'s arguments validated, or the one bad-arguments :class:`McpError` raised (what
    :func:`invoke` does inline, for callers that run a definition later, as tasks do)."""
    plan = d.args
    if args is None:
        args = {}
    if type(args) is not dict:
        raise _bad_type(family)
    stray = args.keys() - plan.field_keys
    if stray:
        args = _known(args, stray, family)
    try:
        return plan.validator.validate_python(args)
    except ValidationError as exc:
        raise _invalid(exc, family) from None


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


async def _attempt(family: Family[D], d: D, validated: Any, req: Inbound, target: str,
                   resolved: dict[str, Any] | None = None) -> dict[str, Any]:
    """One call of the handler, with fresh arguments and context, its value shaped (the
    dependencies' values, ``resolved``, stay those of the request)."""
    plan = d.args
    kwargs = plan.kwargs(validated)
    ctx: Context | None = None
    if plan.ctx_param is not None:
        ctx = family.context(d, req, family.operation(d, target), target)
        kwargs[plan.ctx_param] = ctx
    if resolved:
        kwargs.update(resolved)
    direct = d.direct
    value = await (direct(**kwargs) if direct is not None else d.call(kwargs))
    return family.shape(d, value, ctx, req, target)


def _failure(family: Family[D], d: D, exc: Exception, req: Inbound, target: str) -> dict[str, Any]:
    """A failed attempt, classified and logged once, answered as the family answers failures;
    errors about the request itself (:data:`PROTOCOL_ERRORS`) propagate as raised."""
    if isinstance(exc, McpError) and exc.code in PROTOCOL_ERRORS:
        raise exc
    return family.failed(d, classify_and_log(exc, family.label(d, target), req.request_id), req)


async def _run(core: ServerCore, family: Family[D], d: D, validated: Any, req: Inbound, target: str,
               first: InputRequired | None = None) -> dict[str, Any]:
    """Every attempt and input round (``first``: the question a first attempt already asked);
    a failure answered by the family. Request state that does not verify is refused as raised."""
    if req.request_state is not None:
        unseal(core, req, family.operation(d, target))
    try:
        return await run_rounds(core, req, family.operation(d, target),
                                lambda: _attempt(family, d, validated, req, target), first)
    except Exception as exc:
        return _failure(family, d, exc, req, target)


def _runner(core: ServerCore, family: Family[D], d: D, validated: Any, req: Inbound,
            target: str) -> Awaitable[dict[str, Any]]:
    """The run of an invocation: :func:`_run`, or with dependencies the short path of
    :func:`_run_plain` when it applies, else :func:`_run_with_dependencies`."""
    plan = d.args
    if not plan.deps:
        return _run(core, family, d, validated, req, target)
    plain = plan.plain_deps
    if plain is not None and req.request_state is None and not core.dependency_overrides:
        return _run_plain(core, family, d, validated, req, target, plain)
    return _run_with_dependencies(core, family, d, validated, req, target)


async def _run_with_dependencies(core: ServerCore, family: Family[D], d: D, validated: Any, req: Inbound,
                                 target: str) -> dict[str, Any]:
    """:func:`_run` for a definition with dependencies: resolved once for the request, their
    cleanup run after the last round with the handler's exception (or cancellation) thrown in."""
    operation = family.operation(d, target)
    if req.request_state is not None:
        unseal(core, req, operation)
    async def rounds(resolved: dict[str, Any]) -> dict[str, Any]:
        if req.request_state is None:
            try:  # the common case: one round, inline
                return await _attempt(family, d, validated, req, target, resolved)
            except InputRequired as sig:
                return await run_rounds(core, req, operation,
                                        lambda: _attempt(family, d, validated, req, target, resolved), sig)
        return await run_rounds(core, req, operation, lambda: _attempt(family, d, validated, req, target, resolved))

    run = Resolution(functools.partial(family.context, d, req, operation, target), core.dependency_overrides)
    try:
        return await run.around(d.args.deps, rounds)
    except Exception as exc:
        return _failure(family, d, exc, req, target)


def _more_rounds(core: ServerCore, family: Family[D], d: D, validated: Any, req: Inbound, target: str,
                 resolved: dict[str, Any], first: InputRequired) -> Awaitable[dict[str, Any]]:
    """The input rounds after a first attempt that asked (kept apart so the common path holds no
    closure)."""
    return run_rounds(core, req, family.operation(d, target),
                      lambda: _attempt(family, d, validated, req, target, resolved), first)


async def _run_plain(core: ServerCore, family: Family[D], d: D, validated: Any, req: Inbound, target: str,
                     plain: tuple[tuple[str, Callable[..., Any], bool, str | None], ...]) -> dict[str, Any]:
    """:func:`_run_with_dependencies` for async functions and async generators taking at most the
    ``Context``, in the common first round: no resolution object, no frame per dependency."""
    plan = d.args
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
                        raise RuntimeError(f"dependency {getattr(call, '__qualname__', call)} did not yield") from None
                    gens.append(made)
                else:
                    resolved[name] = await made
            try:
                if plan.ctx_param is None:
                    kwargs = plan.kwargs(validated)
                    kwargs.update(resolved)
                    direct = d.direct
                    value = await (direct(**kwargs) if direct is not None else d.call(kwargs))
                    result = family.shape(d, value, None, req, target)
                else:
                    result = await _attempt(family, d, validated, req, target, resolved)
            except InputRequired as sig:
                result = await _more_rounds(core, family, d, validated, req, target, resolved, sig)
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
        return _failure(family, d, exc, req, target)


async def _direct(core: ServerCore, family: Family[D], d: D, validated: Any, req: Inbound,
                  target: str) -> dict[str, Any]:
    """:func:`invoke`'s common case (no dependencies, no request state) for :func:`_observed`;
    ``invoke`` keeps its own copy inline, so a call that nothing observes costs no coroutine more."""
    plan = d.args
    try:
        if plan.ctx_param is not None:
            return await _attempt(family, d, validated, req, target)
        kwargs = plan.kwargs(validated)
        direct = d.direct
        value = await (direct(**kwargs) if direct is not None else d.call(kwargs))
        return family.shape(d, value, None, req, target)
    except InputRequired as sig:
        first = sig
    except Exception as exc:
        return _failure(family, d, exc, req, target)
    return await _run(core, family, d, validated, req, target, first)


async def _observed(core: ServerCore, family: Family[D], d: D, validated: Any, req: Inbound,
                    target: str, tel: Telemetry) -> dict[str, Any]:
    with family.observe(tel, d, req, target) as report:
        try:
            if d.args.deps or req.request_state is not None:
                result = await _runner(core, family, d, validated, req, target)
            else:
                result = await _direct(core, family, d, validated, req, target)
        except BaseException:
            report(True)
            raise
        report(bool(result.get("isError")))
        return result


async def invoke(core: ServerCore, family: Family[D], d: D, args: Any, req: Inbound, target: str) -> dict[str, Any]:
    """Invoke ``d`` (found by ``family`` for ``target``) with the request's raw ``args``.

    Every ``tools/call`` passes here, so the common case (no telemetry, no request state, a
    first attempt that asks nothing) runs in this one coroutine; the rest in :func:`_run`."""
    if d.auth:
        core.check_scopes(d.auth, req)
    plan = d.args
    if args is None:
        args = {}
    try:
        if type(args) is not dict:
            raise _bad_type(family)
        stray = args.keys() - plan.field_keys
        if stray:
            args = _known(args, stray, family)
        validated = plan.validator.validate_python(args)
    except ValidationError as exc:
        return family.failed(d, _invalid(exc, family), req)
    except McpError as err:
        return family.failed(d, err, req)
    tel = core.telemetry
    if tel is not None:
        return await _observed(core, family, d, validated, req, target, tel)
    if plan.deps:
        return await _runner(core, family, d, validated, req, target)
    if req.request_state is not None:
        return await _run(core, family, d, validated, req, target)
    try:
        if plan.ctx_param is not None:
            return await _attempt(family, d, validated, req, target)
        kwargs = plan.kwargs(validated)
        direct = d.direct
        value = await (direct(**kwargs) if direct is not None else d.call(kwargs))
        return family.shape(d, value, None, req, target)
    except InputRequired as sig:
        first = sig
    except Exception as exc:
        return _failure(family, d, exc, req, target)
    return await _run(core, family, d, validated, req, target, first)
