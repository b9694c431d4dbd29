"""The house's rules, checked: imports run one way between the tiers (no module imports a
tier above its own; ``if TYPE_CHECKING:`` imports, which never run, may name one for a type),
no two modules import each other, even through others, even only for types, none but the
package's ``__init__`` imports ``mcpcore/app.py``,
no module of mcpcore/ is over 400 lines, and docs/architecture.md names only modules that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mcpcore"

# Lowest first. A module belongs to the tier of its first part below mcpcore (the package's
# own __init__ is the public API, on top).
TIERS: list[set[str]] = [
    {"_json", "_version", "asgi_types", "errors", "logs", "config", "queues", "content", "jsonschema", "metrics"},
    {"protocol", "security", "redis_client", "redis_sentinel", "redis_startup", "client", "store_kinds"},
    {"context", "storage", "bus", "sessions", "auth", "telemetry", "layer", "credentials"},
    {"definitions", "extensions"},
    {"server", "lint", "middleware", "tasks", "openapi", "compose"},
    {"runtime", "transports"},
    {"landing", "side_routes", "serving", "http_limits", "builtin_stores", "wiring", "state_layer", "stack",
     "observability"},
    {"app"},
    {"cli", "targets", "commands", "testing", "__main__", ""},
]


def tier_of(module: str) -> int:
    parts = module.split(".")
    name = parts[1] if len(parts) > 1 else ""
    for i, names in enumerate(TIERS):
        if name in names:
            return i
    raise AssertionError(f"{module} is in no tier: add {name!r} to TIERS in tests/test_layers.py")


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def runtime_imports(module: str, path: Path, *, typing_too: bool = False) -> list[tuple[int, str]]:
    """``(line, imported module)`` for every import that runs (not under ``if TYPE_CHECKING:``,
    unless ``typing_too``), at module level or in a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if not typing_too and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                if not node.module:  # ``from .. import _json``: each name is a module of that package
                    found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
                    continue
            else:
                target = node.module or ""
            if target.startswith("mcpcore"):
                found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("mcpcore")]
    return found


def test_imports_flow_one_way_between_tiers() -> None:
    upward = []
    for module, path in sorted(modules().items()):
        mine = tier_of(module)
        for line, target in runtime_imports(module, path):
            if tier_of(target) > mine:
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {target} (tier {tier_of(target)} > {mine})")
    assert not upward, "imports that climb a tier:\n" + "\n".join(upward)


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of mcpcore it imports anywhere (``if TYPE_CHECKING:`` and function
    bodies included); ``from package import name`` counts the submodule when ``name`` is one."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        targets = set()
        for _, target in runtime_imports(module, path, typing_too=True):
            if target in known:
                targets.add(target)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], node.module]) if node.level else node.module
                targets.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known)
        targets.discard(module)
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_not_even_for_types() -> None:
    graph = import_graph()
    found = cycles(graph)
    detail = ["  " + " <-> ".join(c) + ": " + "; ".join(f"{a} imports {b}" for a in c for b in sorted(graph[a])
                                                          if b in c) for c in found]
    assert not found, "import cycles (TYPE_CHECKING and function-level imports count too):\n" + "\n".join(detail)


def test_no_module_but_the_package_imports_the_app() -> None:
    """Extensions plug in through the seam (``mcpcore/extensions/seam.py``), parts receive what they
    use: nothing under mcpcore/ needs ``McpApp`` itself, not even for a type."""
    importers = sorted(module for module, targets in import_graph().items()
                       if "mcpcore.app" in targets and module != "mcpcore")
    assert not importers, f"modules that import mcpcore/app.py (only mcpcore/__init__.py may): {importers}"


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_every_package_of_mcpcore_has_a_tier() -> None:
    for module in modules():
        tier_of(module)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_400_lines(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= 400, f"{path.relative_to(ROOT)} has {lines} lines: split it along what it does"


def test_the_architecture_guide_names_modules_that_exist() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(mcpcore/[\w/]+(?:\.py|/))`", text))
    assert len(named) > 20
    missing = [n for n in sorted(named) if not (ROOT / n).exists()]
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"
    every = {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    unnamed = sorted(m for m in every if m not in named and str(Path(m).parent) + "/" not in named)
    assert not unnamed, f"docs/architecture.md does not place these modules: {unnamed}"
