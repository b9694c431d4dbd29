"""The one way a definition is invoked: tools, prompts and resources plug in as families.

For every ``tools/call``, ``prompts/get`` and ``resources/read`` the same steps run, in order:
the family finds the definition, the caller's scopes are checked, the arguments are validated
(one shape of bad-arguments error for all three), then, inside the family's telemetry span and
the input rounds of :mod:`.rounds`, each attempt builds a fresh ``Context``, calls the handler
and lets the family shape its value. A failure is classified and logged once, and the family
decides how it reaches the client: an ``isError`` result (tools) or a JSON-RPC error (the others).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import ValidationError

from ..context import Context, Inbound
from ..context.inputs import InputRequired
from ..definitions.schema import ArgsPlan
from ..errors import ErrorContract, JsonRpcErrorCode, McpError
from .results import classify_and_log
from .rounds import run_rounds, unseal

if TYPE_CHECKING:
    from ..telemetry import Telemetry
    from .core import ServerCore

__all__ = ["PROTOCOL_ERRORS", "Family", "invalid_arguments", "invoke", "valid_arguments"]

D = TypeVar("D")

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
    return [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
            for e in exc.errors(include_url=False, include_input=False)[:_MAX_ISSUES]]


def valid_arguments(plan: ArgsPlan, args: Any, family: Family[Any]) -> Any:
    """``args`` validated against ``plan`` (keys starting with ``_`` that are not parameters are
    client artifacts and dropped); raises :func:`invalid_arguments`."""
    if type(args) is not dict:
        raise invalid_arguments('"arguments" must be an object.', family.hint)
    stray = args.keys() - plan.field_keys
    if stray:
        extra = sorted(k for k in stray if not k.startswith("_"))
        if extra:
            raise invalid_arguments(f"Unknown argument(s): {', '.join(extra)}.", family.hint,
                                    [{"path": k, "message": f"not an argument of this {family.noun}"} for k in extra])
        args = {k: v for k, v in args.items() if k not in stray}
    try:
        return plan.validator.validate_python(args)
    except ValidationError as exc:
        issues = _issues(exc)
        first = issues[0] if issues else {"path": "", "message": "invalid"}
        raise invalid_arguments(f"Invalid arguments: {first['path'] or 'input'}: {first['message']}",
                                family.hint, issues) from exc


def _ignore(failed: bool) -> None:
    return None


@contextmanager
def _span(tel: Telemetry, name: str, req: Inbound, attributes: dict[str, Any]) -> Iterator[Callable[[bool], None]]:
    with tel.execution(name, req, attributes):
        yield _ignore


class Family(Generic[D]):
    """How one kind of definition plugs into :func:`invoke`. ``target`` is what the request
    names it by (a tool's or prompt's name, a resource's URI)."""

    noun = "definition"
    """What the definition is called in a bad-arguments issue."""
    hint = "Call it again with corrected arguments."
    """The recovery hint of a bad-arguments error."""

    def plan(self, d: D) -> ArgsPlan:
        """How ``d``'s arguments are validated and passed."""
        raise NotImplementedError

    def scopes(self, d: D) -> Sequence[str]:
        """The OAuth scopes a caller of ``d`` must hold."""
        return ()

    def contracts(self, d: D) -> Sequence[ErrorContract]:
        """``d``'s declared failures (``errors=[...]``)."""
        return ()

    def operation(self, d: D, target: str) -> str:
        """The operation name a ``Context`` reports and request state is sealed to."""
        raise NotImplementedError

    def label(self, d: D, target: str) -> str:
        """Where a failure happened, for the log."""
        return self.operation(d, target)

    def context(self, d: D, req: Inbound, operation: str, target: str) -> Context:
        """The ``Context`` one attempt receives."""
        return Context(req, operation=operation, errors=self.contracts(d))

    async def produce(self, d: D, kwargs: dict[str, Any], ctx: Context | None, req: Inbound,
                      target: str) -> dict[str, Any]:
        """Call the handler once with ``kwargs`` and shape its value into the method's result."""
        raise NotImplementedError

    def failed(self, d: D, err: McpError, req: Inbound) -> dict[str, Any]:
        """The answer to a classified failure: a result, or raise it as a JSON-RPC error."""
        raise err

    def observe(self, tel: Telemetry, d: D, req: Inbound, target: str) -> AbstractContextManager[
            Callable[[bool], None]]:
        """The telemetry span of one invocation; yields a function told whether it failed."""
        raise NotImplementedError


async def _attempt(family: Family[D], d: D, validated: Any, req: Inbound, operation: str,
                   target: str) -> dict[str, Any]:
    plan = family.plan(d)
    kwargs = plan.kwargs(validated)
    ctx: Context | None = None
    if plan.ctx_param is not None:
        ctx = family.context(d, req, operation, target)
        kwargs[plan.ctx_param] = ctx
    return await family.produce(d, kwargs, ctx, req, target)


async def _run(core: ServerCore, family: Family[D], d: D, validated: Any, req: Inbound, operation: str,
               target: str) -> dict[str, Any]:
    """Every attempt and input round; a failure answered by the family. Request state that does
    not verify is refused as raised."""
    if req.request_state is not None:
        unseal(core, req, operation)
    try:
        if req.request_state is None:
            try:  # the common case: one round, no state to verify
                return await _attempt(family, d, validated, req, operation, target)
            except InputRequired as sig:
                first: InputRequired | None = sig
        else:
            first = None
        return await run_rounds(core, req, operation, lambda: _attempt(family, d, validated, req, operation, target),
                                first)
    except McpError as exc:
        if exc.code in PROTOCOL_ERRORS:
            raise
        return family.failed(d, classify_and_log(exc, family.label(d, target), req.request_id), req)
    except Exception as exc:
        return family.failed(d, classify_and_log(exc, family.label(d, target), req.request_id), req)


async def invoke(core: ServerCore, family: Family[D], d: D, args: Any, req: Inbound, target: str) -> dict[str, Any]:
    """Invoke ``d`` (found by ``family`` for ``target``) with the request's raw ``args``."""
    scopes = family.scopes(d)
    if scopes:
        core.check_scopes(scopes, req)
    try:
        validated = valid_arguments(family.plan(d), {} if args is None else args, family)
    except McpError as err:
        return family.failed(d, err, req)
    operation = family.operation(d, target)
    tel = core.telemetry
    if tel is None:
        return await _run(core, family, d, validated, req, operation, target)
    with family.observe(tel, d, req, target) as report:
        try:
            result = await _run(core, family, d, validated, req, operation, target)
        except BaseException:
            report(True)
            raise
        report(bool(result.get("isError")))
        return result


def span(tel: Telemetry, name: str, req: Inbound, attributes: dict[str, Any]) -> AbstractContextManager[
        Callable[[bool], None]]:
    """A plain execution span for :meth:`Family.observe` (the outcome is not reported)."""
    return _span(tel, name, req, attributes)
