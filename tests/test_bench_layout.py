"""The benchmark package's layout holds: every module imports, imports between its modules run
one way (the harness never reaches up into the scenarios or the entry point), no module takes a
private name from another, there are no import cycles, and no module grows past 400 lines."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "benchmarks"
# Not modules of the package: the servers are ASGI apps that uvicorn loads from their own
# directory (some in the peers' virtualenv), and the chart is a script the peers' python runs.
NOT_IMPORTED = ("benchmarks/servers/", "benchmarks/harness/chart.py")
MAX_LINES = 400


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the benchmarks package under ``root``."""
    out: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(NOT_IMPORTED) or "/." in rel:
            continue
        parts = rel[:-3].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for every import of the package's modules,
    including attribute access on a module bound by an import (``from . import run as r; r._x``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str | None]] = []
    bound: dict[str, str] = {}  # local name -> package module it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    found.append((alias.name, None))
                    if alias.asname:
                        bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base != PACKAGE and not base.startswith(PACKAGE + "."):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    found.append((sub, None))
                    bound[alias.asname or alias.name] = sub
                else:
                    found.append((base, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            found.append((bound[node.value.id], node.attr))
    return found


def layout_problems(root: Path) -> list[str]:
    """Every breach of the layout's rules under ``root`` (empty: the layout holds)."""
    known = modules(root)
    problems: list[str] = []
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            problems.append(f"{name}: {lines} lines (at most {MAX_LINES})")
        graph[name] = set()
        for target, taken in _imports(name, path, known):
            if target != name:
                graph[name].add(target)
            if taken and taken.startswith("_") and not taken.startswith("__") and target != name:
                problems.append(f"{name} takes the private name {taken} from {target}")
            if name.startswith(f"{PACKAGE}.harness") and not (target == PACKAGE
                                                              or target.startswith(f"{PACKAGE}.harness")):
                problems.append(f"{name} (harness) imports {target}")
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                problems.append("import cycle: " + " -> ".join([*trail[trail.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return problems


@pytest.mark.parametrize("name", sorted(modules(ROOT)))
def test_every_benchmarks_module_imports(name: str) -> None:
    assert importlib.import_module(name).__name__ == name


def test_imports_run_one_way_without_private_names_or_cycles() -> None:
    assert modules(ROOT).keys() >= {"benchmarks.run", "benchmarks.harness.launch", "benchmarks.scenarios.load"}
    assert layout_problems(ROOT) == []


def test_the_checks_catch_a_breach(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE
    (pkg / "harness").mkdir(parents=True)
    (pkg / "scenarios").mkdir()
    for init in (pkg, pkg / "harness", pkg / "scenarios"):
        (init / "__init__.py").write_text("")
    (pkg / "harness" / "core.py").write_text("from ..scenarios import load\n\n_SECRET = 1\n")
    (pkg / "scenarios" / "load.py").write_text("from ..harness import core\nfrom ..harness.core import _SECRET\n"
                                               "x = core._SECRET\n" + "y = 1\n" * MAX_LINES)
    problems = layout_problems(tmp_path)
    assert "benchmarks.harness.core (harness) imports benchmarks.scenarios.load" in problems
    assert problems.count("benchmarks.scenarios.load takes the private name _SECRET from benchmarks.harness.core") == 2
    assert any(p.startswith("import cycle: ") for p in problems)
    assert any(p.startswith("benchmarks.scenarios.load: ") and "lines" in p for p in problems)
