"""What every rule module shares: the definition under check and the sink findings go to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..definitions.prompts import PromptDefinition
from ..definitions.resources import ResourceDefinition
from ..definitions.tools import ToolDefinition
from .catalog import RULES, Severity
from .findings import Finding

__all__ = ["Definition", "Options", "Sink", "Subject"]

Definition = ToolDefinition | ResourceDefinition | PromptDefinition
Portability = Literal["standard", "strict"]


@dataclass(frozen=True, slots=True)
class Options:
    """Knobs every rule may read."""

    portability: Portability = "standard"

    @property
    def strict(self) -> bool:
        return self.portability == "strict"


@dataclass(frozen=True, slots=True)
class Subject:
    """A definition being checked, with the kind and name findings are reported under."""

    kind: str
    name: str
    definition: Definition

    @property
    def fn(self) -> Callable[..., Any]:
        return self.definition.fn

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"

    @staticmethod
    def of(d: Definition) -> Subject:
        if isinstance(d, ToolDefinition):
            return Subject("tool", d.name, d)
        if isinstance(d, PromptDefinition):
            return Subject("prompt", d.name, d)
        return Subject("resource", d.name, d)


@dataclass(slots=True)
class Sink:
    """Collects findings; severities come from the catalog unless overridden. A ``strict`` finding
    is one only strict portability reports."""

    findings: list[tuple[Subject, Finding, bool]] = field(default_factory=list)

    def add(self, rule: str, subject: Subject, message: str, fix: str, *,
            severity: Severity | None = None, strict: bool = False) -> None:
        sev = severity if severity is not None else RULES[rule].severity
        finding = Finding(rule, sev, subject.kind, subject.name, message, fix)
        self.findings.append((subject, finding, strict or RULES[rule].strict_only))
