"""The definition linter: mistakes that are legal but hurt, caught before deploy.

Definitions already refuse, when decorated, what cannot work (no description, bad names,
duplicates, malformed error contracts). The linter checks what works but serves models and
clients badly: vague descriptions, undescribed fields, schemas some clients reject, recovery
hints too thin to act on, capped lists that read as complete, a ``format=`` that hides fields.

From the command line (exit code 0 when clean, 1 on findings, 2 when the app cannot be loaded)::

    mcpcore lint myserver:app                     # one line per finding, with a fix
    mcpcore lint myserver:app --format json
    mcpcore lint myserver:app --portability strict

From a test::

    from mcpcore.lint import lint_app

    def test_definitions_lint_clean():
        report = lint_app(app)
        assert report.passed, report.text()

Silencing a rule for one definition (the reason is kept for readers; silenced findings are
listed in ``report.suppressed``, and an entry that silences nothing is reported as
``lint-ignore-stale``)::

    from mcpcore.lint import lint_ignore

    @lint_ignore("input-field-description", reason="the conformance suite fixes this schema")
    @tool(input_schema=FIXTURE)
    def fixture(...): ...

``lint_app(app, ignore={"tool:search": ["capped-list-no-truncation"], "*": ["schema-no-defs"]})``
and ``mcpcore lint --ignore RULE`` silence from the outside. :data:`RULES` lists every rule.
"""

from __future__ import annotations

from .catalog import RULES, Rule, Severity
from .findings import Finding, LintReport
from .runner import IGNORE_ATTR, lint_app, lint_definitions, lint_ignore
from .schemas import PORTABLE_FORMATS

__all__ = [
    "IGNORE_ATTR",
    "PORTABLE_FORMATS",
    "RULES",
    "Finding",
    "LintReport",
    "Rule",
    "Severity",
    "lint_app",
    "lint_definitions",
    "lint_ignore",
]
