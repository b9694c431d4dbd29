"""Signature rules: the decorators' parameter checks for definitions built another way, and
``ctx.fail`` called by a handler that declares no failures."""

from __future__ import annotations

import ast
import inspect
import textwrap

from ..definitions.checks import prompt_argument_mistakes, signature_mistakes
from ..definitions.common import type_hints
from ..definitions.prompts import PromptDefinition
from .base import Sink, Subject

__all__ = ["check_fail_contract", "check_signature"]


def check_signature(subject: Subject, sink: Sink) -> None:
    """``signature-mistake`` and ``prompt-argument-type``: what ``@tool``/``@prompt``/``@resource``
    refuse, found in a definition that did not pass through them (built by hand, or altered)."""
    d = subject.definition
    for m in signature_mistakes(d.fn, type_hints(d.fn), kind=subject.kind):
        sink.add("signature-mistake", subject, f"parameter {m.param!r} {m.problem}", m.fix)
    if isinstance(d, PromptDefinition):
        for m in prompt_argument_mistakes(d.args.model):
            sink.add("prompt-argument-type", subject, f"argument {m.param!r} {m.problem}", m.fix)


def _fail_calls(fn: object, ctx_param: str) -> list[int]:
    """Line offsets (from the definition's first line) of ``<ctx_param>.fail(...)`` calls in ``fn``'s
    own source; none when the source cannot be read."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))  # type: ignore[arg-type]
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return []
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fail"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == ctx_param]


def check_fail_contract(subject: Subject, sink: Sink) -> None:
    """``fail-without-contract``: ``ctx.fail`` is there only for a definition with ``errors=[...]``
    (a call elsewhere raises ``AttributeError``, an internal error for the client)."""
    d = subject.definition
    ctx_param = d.args.ctx_param
    if ctx_param is None or (not isinstance(d, PromptDefinition) and d.errors):
        return
    calls = _fail_calls(d.fn, ctx_param)
    if calls:
        what = "a prompt, which declares no failures" if isinstance(d, PromptDefinition) else \
            "no errors=[...] is declared"
        sink.add("fail-without-contract", subject,
                 f"the handler calls {ctx_param}.fail() ({len(calls)} call(s)) but {what}, so {ctx_param}.fail is "
                 "absent and the call fails as an internal error",
                 "declare errors=[ErrorContract(reason, code, when, recovery)] for each reason it fails with, or raise "
                 "McpError (mcpcore.errors.not_found(...), ...) directly" if not isinstance(d, PromptDefinition) else
                 "raise McpError (mcpcore.errors.invalid_params(...), ...) directly")
