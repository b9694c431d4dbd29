"""How a kind of definition plugs into the invoke pipeline (:mod:`.invoke`): its
:class:`Family` (the operation name, the context, the result's shape, how a failure answers, the
telemetry span), and the one bad-arguments error every family answers with.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import ValidationError

from ..context import Context, Inbound
from ..definitions.schema import ArgsPlan
from ..errors import ErrorContract, JsonRpcErrorCode, McpError, quoted

if TYPE_CHECKING:
    from ..telemetry import Telemetry

__all__ = ["PROTOCOL_ERRORS", "Family", "Invocable", "Shape", "invalid_arguments", "known_arguments", "not_an_object",
           "span", "validation_failed"]


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
    pipeline: Any  # its pipeline (:class:`~mcpcore.server.invoke.Pipeline`) once built


D = TypeVar("D", bound=Invocable)
Shape = Callable[[Any, Context | None, Inbound, str], dict[str, Any]]
"""A definition's shaping: ``(value, ctx, req, target) -> result``."""

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


def not_an_object(family: Family[Any]) -> McpError:
    return invalid_arguments('"arguments" must be an object.', family.hint)


def known_arguments(args: dict[str, Any], stray: set[str], family: Family[Any]) -> dict[str, Any]:
    """``args`` without keys that are not parameters: those starting with ``_`` are client
    artifacts and dropped; any other is an unknown argument."""
    extra = sorted(k for k in stray if not k.startswith("_"))
    if extra:
        shown = [quoted(k) for k in extra[:_MAX_ISSUES]]
        more = f" and {len(extra) - len(shown)} more" if len(extra) > len(shown) else ""
        raise invalid_arguments(f"Unknown argument(s): {quoted(', '.join(shown))}{more}.", family.hint,
                                [{"path": k, "message": f"not an argument of this {family.noun}"} for k in shown])
    return {k: v for k, v in args.items() if k not in stray}


def validation_failed(exc: ValidationError, family: Family[Any]) -> McpError:
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

    def shaper(self, d: D) -> Shape:
        """:meth:`shape` for ``d`` alone, chosen once for its pipeline (a family may return a
        shorter way for the definitions it can)."""
        return functools.partial(self.shape, d)

    def failed(self, d: D, err: McpError, req: Inbound) -> dict[str, Any]:
        """The answer to a classified failure: a result, or raise it as a JSON-RPC error."""
        raise err

    def observe(self, tel: Telemetry, d: D, req: Inbound, target: str) -> AbstractContextManager[
            Callable[[bool], None]]:
        """The telemetry span of one invocation; yields a function told whether it failed."""
        raise NotImplementedError


