"""Error contract rules: snake_case unique reasons, a `when`, actionable recovery, sane codes."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..definitions.prompts import PromptDefinition
from ..errors import ErrorContract, JsonRpcErrorCode
from .base import Sink, Subject

__all__ = ["check_contracts", "check_contracts_across"]

MIN_RECOVERY_WORDS = 5
RESERVED_CODES = range(-32768, -32000 + 1)
_REASON = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_KNOWN_CODES = frozenset(int(c) for c in JsonRpcErrorCode)


def _snake(reason: str) -> str:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", reason)
    return "_".join(re.findall(r"[a-z0-9]+", spaced.lower())) or "describe_the_failure"


def _contracts(subject: Subject) -> tuple[ErrorContract, ...]:
    d = subject.definition
    return () if isinstance(d, PromptDefinition) else tuple(d.errors)


def check_contracts(subject: Subject, sink: Sink) -> None:
    """The per-definition ``error-*`` rules."""
    seen: set[str] = set()
    for c in _contracts(subject):
        reason = str(c.reason)
        if not _REASON.match(reason):
            sink.add("error-reason-format", subject,
                     f"error reason {reason!r} is not snake_case; clients match data.reason like a constant",
                     f"rename it to {_snake(reason)!r}")
        if reason in seen:
            sink.add("error-reason-unique", subject, f"error reason {reason!r} is declared twice",
                     f"keep one {reason!r} entry, or rename the other to the failure it really describes")
        seen.add(reason)
        if not isinstance(c.when, str) or not c.when.strip():
            sink.add("error-when-required", subject, f"error {reason!r} does not say when it happens",
                     f"fill in when= for {reason!r}; it is also the default error message")
        recovery = c.recovery if isinstance(c.recovery, str) else ""
        words = len(recovery.split())
        if words < MIN_RECOVERY_WORDS:
            sink.add("error-recovery-min-words", subject,
                     f"recovery hint of {reason!r} ({recovery.strip()!r}) has {words} word(s), fewer than "
                     f"{MIN_RECOVERY_WORDS}; the hint is all a model gets to recover with",
                     "say what to do next, e.g. 'Wait a few seconds and retry with a smaller batch.'")
        try:
            code = int(c.code)
        except (TypeError, ValueError):
            sink.add("error-code-reserved", subject, f"error {reason!r} has the non-integer code {c.code!r}",
                     "use a JsonRpcErrorCode member")
            continue
        if code not in _KNOWN_CODES and code in RESERVED_CODES:
            sink.add("error-code-reserved", subject,
                     f"error {reason!r} uses code {code}, inside the JSON-RPC reserved range -32768..-32000 but "
                     "not a code clients know",
                     "use a JsonRpcErrorCode member such as NotFound, Conflict or RateLimited, or an "
                     "application code outside -32768..-32000")


def check_contracts_across(subjects: Sequence[Subject], sink: Sink) -> None:
    """``error-reason-consistent``: one reason, one code, across the app."""
    first: dict[str, tuple[int, Subject]] = {}
    for s in subjects:
        for c in _contracts(s):
            try:
                code = int(c.code)
            except (TypeError, ValueError):
                continue
            prior = first.get(c.reason)
            if prior is None:
                first[c.reason] = (code, s)
            elif prior[0] != code and prior[1] is not s:
                sink.add("error-reason-consistent", s,
                         f"error reason {c.reason!r} has code {code} here but {prior[0]} on "
                         f"{prior[1].kind} {prior[1].name!r}; clients that key on data.reason get mixed signals",
                         f"use code {prior[0]} here too, or name this failure differently")
