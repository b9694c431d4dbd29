"""Running every rule over an app's definitions, and silencing rules per definition."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from ..definitions.resources import ResourceDefinition
from ..definitions.tools import ToolDefinition
from ..server.registry import Registry, definitions_in
from .apps import check_apps
from .base import Definition, Options, Portability, Sink, Subject
from .catalog import RULES
from .contracts import check_contracts, check_contracts_across
from .definitions import check_annotations, check_prompt, check_resource, check_tool_fields
from .dependencies import check_dependencies, check_visibility
from .enrichment import check_capped_list, check_enrichment
from .findings import Finding, LintReport
from .openapi import check_openapi
from .parity import check_format_parity
from .schemas import check_portability, check_serializable
from .signatures import check_fail_contract, check_signature
from .text import check_description, check_name, check_names_across


class HasRegistry(Protocol):
    """An app, as :func:`lint_app` reads it: its definitions (:class:`~mcpcore.McpApp` is one)."""

    @property
    def registry(self) -> Registry: ...

__all__ = ["IGNORE_ATTR", "lint_app", "lint_definitions", "lint_ignore"]

F = TypeVar("F", bound=Callable[..., Any])
IGNORE_ATTR = "__mcpcore_lint_ignore__"
_STALE = "lint-ignore-stale"


def lint_ignore(*rules: str, reason: str | None = None) -> Callable[[F], F]:
    """Silence lint rules for one definition.

    Put it above or below ``@tool``/``@resource``/``@prompt``; it only records the rule ids on the
    function (attribute ``__mcpcore_lint_ignore__``). Patterns such as ``"schema-*"`` work too.
    Silenced findings stay visible in :attr:`LintReport.suppressed`, and an entry that names no
    known rule or silences nothing is itself reported (``lint-ignore-stale``)::

        @lint_ignore("input-field-description", reason="schema fixed by the conformance suite")
        @tool(input_schema=FIXTURE)
        def fixture(...): ...

    Args:
        rules: rule ids or ``fnmatch`` patterns.
        reason: why the rule does not apply here; stored with the rule id on the function.
    """
    if not rules:
        raise TypeError("lint_ignore needs at least one rule id")
    for r in rules:
        if not isinstance(r, str) or not r:
            raise TypeError(f"lint_ignore takes rule ids, got {r!r}")

    def decorate(fn: F) -> F:
        current: dict[str, str] = dict(getattr(fn, IGNORE_ATTR, None) or {})
        for r in rules:
            current[r] = reason or ""
        try:
            setattr(fn, IGNORE_ATTR, current)
        except (AttributeError, TypeError) as exc:
            raise TypeError(f"lint_ignore decorates a function, not {type(fn).__name__}") from exc
        return fn

    return decorate


def _known(pattern: str) -> bool:
    return any(fnmatch.fnmatchcase(rule, pattern) for rule in RULES)


def _matches(rule: str, patterns: Iterable[str]) -> str | None:
    for p in patterns:
        if fnmatch.fnmatchcase(rule, p):
            return p
    return None


def _check_one(subject: Subject, sink: Sink) -> None:
    d = subject.definition
    check_name(subject, sink)
    check_description(subject, sink)
    check_signature(subject, sink)
    check_fail_contract(subject, sink)
    if isinstance(d, ToolDefinition):
        check_serializable(subject, d.to_wire(), "tools/list", sink)
        check_portability(subject, d.input_schema, "input schema", sink)
        check_portability(subject, d.output_schema, "output schema", sink)
        check_tool_fields(subject, d, sink)
        check_contracts(subject, sink)
        check_enrichment(subject, d, sink)
        check_capped_list(subject, d, sink)
        check_format_parity(subject, d, sink)
        check_annotations(subject, d, sink)
        check_dependencies(subject, d, sink)
        check_visibility(subject, d, sink)
        check_openapi(subject, d, sink)
    elif isinstance(d, ResourceDefinition):
        what = "resources/templates/list" if d.is_template else "resources/list"
        check_serializable(subject, d.template_listing() if d.is_template else d.listing(), what, sink)
        check_contracts(subject, sink)
        check_resource(subject, d, sink)
    else:
        check_serializable(subject, d.to_wire(), "prompts/list", sink)
        check_prompt(subject, d, sink)


def _resolve(objs: Iterable[Any]) -> list[Definition]:
    out: list[Definition] = []
    for obj in objs:
        out.extend(definitions_in(obj))
    return out


def lint_definitions(
    *,
    tools: Iterable[Any] = (),
    resources: Iterable[Any] = (),
    prompts: Iterable[Any] = (),
    portability: Portability = "standard",
    ignore: Mapping[str, Iterable[str]] | None = None,
) -> LintReport:
    """Lint definitions directly (from a test, say) rather than through an app.

    Each argument takes definitions, decorated functions or modules; what they carry is checked
    by its actual kind, in order (tools, then resources, then prompts).

    Args:
        tools, resources, prompts: what to check.
        portability: ``"standard"``, or ``"strict"`` to also flag ``$defs``/``$ref`` and any
            ``$schema`` tag (for the widest range of clients).
        ignore: extra rule ids/patterns to silence, keyed ``"kind:name"`` (``"tool:search"``) or
            ``"*"`` for every definition.

    Raises:
        ValueError: an unknown portability level, or an ``ignore`` entry naming no known rule.
        ConfigurationError: an object that carries no definition.
    """
    if portability not in ("standard", "strict"):
        raise ValueError(f"portability must be 'standard' or 'strict', got {portability!r}")
    extra: dict[str, list[str]] = {}
    for key, patterns in (ignore or {}).items():
        listed = [patterns] if isinstance(patterns, str) else list(patterns)
        for p in listed:
            if not _known(p):
                raise ValueError(f"ignore[{key!r}]: {p!r} names no lint rule")
        extra[key] = listed
    options = Options(portability)
    defs = _resolve(tools) + _resolve(resources) + _resolve(prompts)
    defs.sort(key=lambda d: 0 if isinstance(d, ToolDefinition) else 1 if isinstance(d, ResourceDefinition) else 2)
    subjects = [Subject.of(d) for d in defs]

    sink = Sink()
    for s in subjects:
        _check_one(s, sink)
    check_names_across(subjects, sink)
    check_contracts_across(subjects, sink)
    check_apps(subjects, sink)

    findings, suppressed, used = _suppress(sink.findings, extra, options)
    stale = Sink()
    for s in subjects:
        for pattern in _own_ignores(s):
            if pattern == _STALE:
                continue
            if not _known(pattern):
                stale.add(_STALE, s, f"lint_ignore names {pattern!r}, which is no lint rule",
                          f"remove {pattern!r} or correct it; mcpcore.lint.RULES lists every rule")
            elif (id(s), pattern) not in used:
                stale.add(_STALE, s, f"lint_ignore silences {pattern!r}, but that rule finds nothing here",
                          f"remove {pattern!r} from lint_ignore")
    more, more_suppressed, _ = _suppress(stale.findings, extra, options)
    findings += more
    suppressed += more_suppressed
    return LintReport(findings=findings, passed=not findings, suppressed=suppressed,
                      definitions=len(subjects), portability=portability)


def _own_ignores(subject: Subject) -> list[str]:
    raw = getattr(subject.fn, IGNORE_ATTR, None)
    return list(raw) if isinstance(raw, Mapping) else []


def _suppress(found: list[tuple[Subject, Finding, bool]], extra: Mapping[str, list[str]], options: Options
              ) -> tuple[list[Finding], list[Finding], set[tuple[int, str]]]:
    """Split findings into kept and silenced; ``used`` records every (definition, pattern) that
    matched something, strict-only findings included even in standard mode, so a suppression
    written for strict runs is not stale in standard ones."""
    kept: list[Finding] = []
    dropped: list[Finding] = []
    used: set[tuple[int, str]] = set()
    for subject, finding, strict_only in found:
        own = [p for p in _own_ignores(subject) if fnmatch.fnmatchcase(finding.rule, p)]
        used.update((id(subject), p) for p in own)
        if strict_only and not options.strict:
            continue
        if own or _matches(finding.rule, [*extra.get(subject.key, ()), *extra.get("*", ())]) is not None:
            dropped.append(finding)
        else:
            kept.append(finding)
    return kept, dropped, used


def lint_app(
    app_or_registry: HasRegistry | Registry,
    *,
    portability: Portability = "standard",
    ignore: Mapping[str, Iterable[str]] | None = None,
) -> LintReport:
    """Lint every tool, resource and prompt an app (or a :class:`Registry`) serves.

    Example::

        report = lint_app(app)
        assert report.passed, report.text()

    Args:
        app_or_registry: an :class:`~mcpcore.McpApp` or its ``registry``.
        portability: ``"standard"`` or ``"strict"`` (see :func:`lint_definitions`).
        ignore: extra rules to silence, keyed ``"kind:name"`` or ``"*"``.

    Returns:
        A :class:`LintReport`; ``report.passed`` is ``True`` when nothing was found.
    """
    registry = app_or_registry if isinstance(app_or_registry, Registry) else getattr(app_or_registry, "registry",
                                                                                      None)
    if not isinstance(registry, Registry):
        raise TypeError(f"lint_app takes an McpApp or a Registry, got {type(app_or_registry).__name__}")
    return lint_definitions(tools=list(registry.tools.values()),
                            resources=[*registry.resources.values(), *registry.templates],
                            prompts=list(registry.prompts.values()), portability=portability, ignore=ignore)
