"""The budgets (``budgets.toml``), the verdict on a count, the table, and rewriting the budgets."""

from __future__ import annotations

import platform
import re
import tomllib
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from .count import ROOT, Count, limit_key
from .driver import CASES, HIGH, LOW

BUDGET_FILE = Path(__file__).with_name("budgets.toml")
TOLERANCE = 0.02  # a count may exceed its budget by this much before the test fails
PACKAGES = ("uvloop", "orjson", "pydantic-core", "starlette")
_LINE = re.compile(r"^(\w+) = (\d+)\s*$", re.M)


@dataclass(frozen=True)
class Budgets:
    """The budget of each case (instructions per request) and where they were measured."""

    limits: dict[str, int]
    measured_on: dict[str, str]


def load(path: Path = BUDGET_FILE) -> Budgets:
    """Read ``path``; ``ValueError`` naming the file when it is not a budget file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        limits = {str(k): int(v) for k, v in data["budget"].items()}
        measured = {str(k): str(v) for k, v in data.get("measured", {}).items()}
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a budget file ({exc}); it needs a [budget] table of `name = count` "
                         "lines") from exc
    return Budgets(limits, measured)


def environment(valgrind: str) -> dict[str, str]:
    """What a count depends on besides the code: interpreter, machine, valgrind, the C extensions."""
    env = {"python": platform.python_version(), "machine": platform.machine(), "valgrind": valgrind}
    env.update({name: version(name) for name in PACKAGES})
    return env


def shown(path: Path) -> str:
    """``path`` relative to the repository when it is in it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _fix(key: str, path: Path) -> str:
    return (f"If the request now does work worth its instructions, raise `{key}` in "
            f"{shown(path)} to the new count, with the reason and both figures in "
            "the commit message (`python -m benchmarks.budget --write` writes the counts); otherwise find "
            "the instructions the change added, and remove them.")


def verdict(counts: dict[str, Count], budgets: Budgets, current: dict[str, str],
            path: Path = BUDGET_FILE) -> list[str]:
    """One message per case over its budget by more than :data:`TOLERANCE` (or without a budget,
    or a budget for no case); empty when every count is within its budget."""
    problems: list[str] = []
    for case in CASES:
        count = counts[case.key].per_request
        budget = budgets.limits.get(case.key)
        if budget is None:
            problems.append(f"{case.key}: {count:,.0f} instructions per request and no budget: add "
                            f"`{case.key} = {count:.0f}` to the [budget] table of {shown(path)}.")
        elif count > budget * (1 + TOLERANCE):
            problems.append(f"{case.key}: {count:,.0f} instructions per request, budget {budget:,}: "
                            f"{(count / budget - 1) * 100:+.1f} % (at most {TOLERANCE * 100:+.0f} % allowed). "
                            + _fix(case.key, path))
    unknown = sorted(set(budgets.limits) - {c.key for c in CASES})
    if unknown:
        problems.append(f"{shown(path)} has budgets for no counted request: {', '.join(unknown)} (remove them).")
    changed = {k: (v, current.get(k)) for k, v in budgets.measured_on.items() if current.get(k) != v}
    if problems and changed:
        what = ", ".join(f"{k} {was} -> {now}" for k, (was, now) in changed.items())
        problems.append(f"Note: the budgets were set with other versions ({what}); counts move with them. "
                        "After such an upgrade, set every budget anew in a commit of its own that says so.")
    return problems


def table(counts: dict[str, Count], budgets: Budgets) -> str:
    """Counts, budgets and the ratio to the pure-ASGI limit answering the same request."""
    rows = [f"instructions per request, in process under callgrind, ({HIGH:,} - {LOW:,}) requests / "
            f"{HIGH - LOW:,}, PYTHONHASHSEED=0",
            f"| {'request':<15} | {'count':>9} | {'budget':>9} | {'vs budget':>9} | {'pure ASGI':>9} | "
            f"{'x limit':>7} | {'cycles/req':>10} |",
            f"|{'-' * 17}|{'-' * 10}:|{'-' * 10}:|{'-' * 10}:|{'-' * 10}:|{'-' * 8}:|{'-' * 11}:|"]
    for case in CASES:
        c, limit = counts[case.key], counts[limit_key(case)].per_request
        budget = budgets.limits.get(case.key)
        vs = f"{(c.per_request / budget - 1) * 100:+.2f} %" if budget else "none"
        rows.append(f"| {case.key:<15} | {c.per_request:>9,.0f} | {budget or 0:>9,} | {vs:>9} | {limit:>9,.0f} | "
                    f"{c.per_request / limit:>6.2f}x | {c.cycles_per_request:>10.2f} |")
    plain, layered = counts.get("call_2026"), counts.get("layers_2026")
    if plain and layered:
        rows.append(f"layers_2026 / call_2026 (three middleware layers and a Depends): "
                    f"{layered.per_request / plain.per_request:.3f}x")
    stopped = sorted({f"{name} ({c.key})" for c in counts.values() for name in c.stopped})
    if stopped:
        rows.append("background tasks stopped before counting (not a request's cost): " + ", ".join(stopped))
    lower = [f"{c.key} = {counts[c.key].per_request:.0f}" for c in CASES
             if c.key in budgets.limits and counts[c.key].per_request < budgets.limits[c.key] * (1 - TOLERANCE)]
    if lower:
        rows.append("under budget by more than 2 %: lower it in the commit that earned it: " + ", ".join(lower))
    return "\n".join(rows)


def write(counts: dict[str, Count], current: dict[str, str], path: Path = BUDGET_FILE) -> list[str]:
    """Set every budget in ``path`` to its count and [measured] to ``current``, keeping the rest of
    the file (its header); the lines that changed, as ``name: old -> new``."""
    text = path.read_text(encoding="utf-8")
    head, sep, _ = text.partition("[budget]\n")
    if not sep:
        raise ValueError(f"{path}: no [budget] table to write")
    old = {m.group(1): int(m.group(2)) for m in _LINE.finditer(text)}
    lines = [f"{c.key} = {counts[c.key].per_request:.0f}" for c in CASES]
    measured = [f'{k} = "{v}"' for k, v in current.items()]
    path.write_text(head + sep + "\n".join(lines) + "\n\n[measured]\n" + "\n".join(measured) + "\n", encoding="utf-8")
    return [f"{c.key}: {old.get(c.key)} -> {counts[c.key].per_request:.0f}" for c in CASES
            if old.get(c.key) != round(counts[c.key].per_request)]
