"""Findings, the report, and their text and JSON renderings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import _json
from .catalog import Severity

__all__ = ["Finding", "LintReport"]


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem in one definition.

    Attributes:
        rule: the rule id (see :data:`mcpcore.lint.RULES`).
        severity: ``"error"`` or ``"warning"``.
        kind: ``"tool"``, ``"resource"`` or ``"prompt"``.
        name: the definition's name.
        message: what is wrong, on one line.
        fix: how to fix it, concretely.
    """

    rule: str
    severity: Severity
    kind: str
    name: str
    message: str
    fix: str

    def line(self) -> str:
        """``<severity> <rule-id> <kind>:<name>: <message> (fix: <how to fix>)``."""
        return (f"{self.severity} {self.rule} {self.kind}:{self.name}: {_one_line(self.message)} "
                f"(fix: {_one_line(self.fix)})")

    def to_json(self) -> dict[str, str]:
        """The finding as a JSON object."""
        return {"rule": self.rule, "severity": self.severity, "kind": self.kind, "name": self.name,
                "message": self.message, "fix": self.fix}


@dataclass(slots=True)
class LintReport:
    """What :func:`~mcpcore.lint.lint_app` found.

    Attributes:
        findings: the findings that were not silenced, in definition order.
        passed: ``True`` when there are no findings at all (warnings fail too: silence a
            warning you accept with :func:`~mcpcore.lint.lint_ignore`).
        suppressed: the findings silenced by ``lint_ignore`` or ``ignore=``, for the record.
        definitions: how many definitions were checked.
        portability: the portability level used.
    """

    findings: list[Finding]
    passed: bool
    suppressed: list[Finding] = field(default_factory=list)
    definitions: int = 0
    portability: str = "standard"

    @property
    def errors(self) -> list[Finding]:
        """The findings of severity ``error``."""
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        """The findings of severity ``warning``."""
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def rule_ids(self) -> list[str]:
        """The rule id of every finding, in order (handy in tests)."""
        return [f.rule for f in self.findings]

    def text(self) -> str:
        """One line per finding (empty when clean)."""
        return "\n".join(f.line() for f in self.findings)

    def summary(self) -> str:
        """A one-line count of what was found."""
        head = f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)" if self.findings else "no findings"
        tail = f", {len(self.suppressed)} suppressed" if self.suppressed else ""
        return f"{head} in {self.definitions} definition(s){tail} (portability: {self.portability})"

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object."""
        return {
            "passed": self.passed,
            "portability": self.portability,
            "definitions": self.definitions,
            "counts": {"error": len(self.errors), "warning": len(self.warnings),
                       "suppressed": len(self.suppressed)},
            "findings": [f.to_json() for f in self.findings],
            "suppressed": [f.to_json() for f in self.suppressed],
        }

    def json(self) -> str:
        """:meth:`to_json` serialised."""
        return _json.dumps_str(self.to_json())
