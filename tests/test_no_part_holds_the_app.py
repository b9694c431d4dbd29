"""Nothing holds the whole app (issue 27, build item 2): a part receives what it uses, an
extension (tasks, skills, side routes, composition, your own) the :class:`~mcpcore.extensions.Seam`.

Two checks, beside tests/test_layers.py (which refuses any import of ``mcpcore/app.py``):

- no module of mcpcore/ but app.py names ``McpApp`` in an annotation, not even a string one;
- at run time, in an app that uses every extension (a mounted child with its own mount, middleware,
  ``setup`` and ``storage=``, a proxy, skills, tasks, metrics, a FastAPI app's routes), nothing
  reachable from the app refers to an ``McpApp`` but the app itself and functions written in
  mcpcore/app.py (its own wiring: the closure that hands the ``setup`` hook its app).
"""

from __future__ import annotations

import ast
import collections
import functools
import types
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpcore import Context, McpApp, Middleware, Settings, tool
from mcpcore.compose import proxy
from mcpcore.storage.memory import MemoryStorage
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mcpcore"
OWN_WIRING = {PACKAGE / "app.py", PACKAGE / "__init__.py"}


def annotations_naming_the_app(path: Path) -> list[str]:
    """``file:line`` of each annotation (parameter, return, attribute; string ones parsed) naming McpApp."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []

    def names(node: ast.AST | None) -> set[str]:
        if node is None:
            return set()
        out: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                out.add(sub.id)
            elif isinstance(sub, ast.Attribute):
                out.add(sub.attr)
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                try:
                    out |= names(ast.parse(sub.value, mode="eval"))
                except SyntaxError:
                    continue
        return out

    for node in ast.walk(tree):
        annotated: list[ast.AST | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            annotated += [arg.annotation for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if arg]
            annotated.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotated.append(node.annotation)
        if any("McpApp" in names(n) for n in annotated):
            found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}")
    return found


def test_no_module_but_the_app_annotates_with_mcpapp() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path not in OWN_WIRING
             for hit in annotations_naming_the_app(path)]
    assert not found, f"annotations naming McpApp outside mcpcore/app.py (take the Seam or a Protocol): {found}"


def test_the_annotation_check_finds_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mcpcore.app import McpApp\n"
                   "class Part:\n    app: 'McpApp | None'\n    def __init__(self, parent: McpApp) -> None: ...\n")
    assert [h.rsplit(":", 1)[1] for h in annotations_naming_the_app_at(bad)] == ["5", "6"]


def annotations_naming_the_app_at(path: Path) -> list[str]:
    global ROOT
    saved, ROOT = ROOT, path.parent
    try:
        return annotations_naming_the_app(path)
    finally:
        ROOT = saved


def _edges(obj: Any) -> list[tuple[str, Any]]:
    """What ``obj`` refers to, as the walk follows it: mcpcore's objects (attributes and slots), the
    containers they hold, and mcpcore's functions (closures, bound methods, partials)."""
    if isinstance(obj, dict):
        return [(f"[{k!r}]", v) for k, v in obj.items()] + [("<key>", k) for k in obj]
    if isinstance(obj, (list, tuple, set, frozenset, collections.deque)):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if isinstance(obj, collections.ChainMap):
        return [(f".maps[{i}]", m) for i, m in enumerate(obj.maps)]
    if isinstance(obj, functools.partial):
        return [(".func", obj.func), *((f".args[{i}]", a) for i, a in enumerate(obj.args)),
                *((f".keywords[{k!r}]", v) for k, v in obj.keywords.items())]
    if isinstance(obj, types.MethodType):
        return [(".__self__", obj.__self__), (".__func__", obj.__func__)]
    if isinstance(obj, types.FunctionType):
        if not (obj.__module__ or "").startswith("mcpcore"):
            return []  # the user's functions: what they close over is theirs
        cells = obj.__closure__ or ()
        out = []
        for name, cell in zip(obj.__code__.co_freevars, cells, strict=True):
            try:
                out.append((f".<closure {name}>", cell.cell_contents))
            except ValueError:  # an empty cell
                continue
        return out
    if isinstance(obj, type) or not type(obj).__module__.startswith("mcpcore"):
        return []
    out = list(vars(obj).items()) if hasattr(obj, "__dict__") else []
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                out.append((slot, getattr(obj, slot)))
    return [(f".{k}", v) for k, v in out]


def holders_of_an_app(root: McpApp) -> list[str]:
    """The paths from ``root`` to each reference to an ``McpApp`` held by anything but an app or a
    function of mcpcore/app.py."""
    seen = {id(root)}
    queue: collections.deque[tuple[Any, str]] = collections.deque([(root, "app")])
    found: list[str] = []
    while queue:
        obj, path = queue.popleft()
        for label, value in _edges(obj):
            if isinstance(value, McpApp):
                own = obj is value or (isinstance(obj, types.FunctionType) and obj.__module__ == "mcpcore.app")
                if not own and not (isinstance(obj, McpApp) and value is obj):
                    found.append(f"{path}{label} ({type(obj).__qualname__})")
                continue
            if id(value) in seen or isinstance(value, (str, bytes, int, float, bool, type(None))):
                continue
            seen.add(id(value))
            queue.append((value, path + label))
    return found


class Counting(Middleware):
    """A child's middleware (it starts with the parent)."""

    name = "counting"


@tool
def hello(ctx: Context) -> str:
    """Say hello."""
    return f"hello from {ctx.app_state.who}"


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


async def child_setup(app: McpApp) -> None:
    app.state.who = app.server_info["name"]


def the_whole_house(tmp_path: Path) -> McpApp:
    settings = Settings.from_env({"MCP_METRICS_ENABLED": "true"})
    grandchild = McpApp("grandchild", tools=[ping], settings=settings)
    child = McpApp("child", tools=[hello], settings=settings, middleware=[Counting()], setup=child_setup,
                   storage=MemoryStorage(), mounts={"deep": grandchild})
    backend = McpApp("backend", tools=[ping], settings=Settings.from_env({}))
    (tmp_path / "skills" / "greet").mkdir(parents=True)
    (tmp_path / "skills" / "greet" / "SKILL.md").write_text("---\nname: greet\ndescription: Greets.\n---\n\n# greet\n")
    app = McpApp("parent", settings=settings, skills=tmp_path / "skills", mounts={"kid": child})
    app.mount(proxy("http://backend.test/mcp", era="modern", transport=httpx.ASGITransport(app=backend)), "far")
    from fastapi import FastAPI

    api = FastAPI()

    @api.get("/count")
    def count() -> dict[str, int]:
        return {"count": 1}

    app.include_fastapi(api, routes=["count"])
    return app


async def test_nothing_reachable_from_the_app_holds_an_app(tmp_path: Path) -> None:
    app = the_whole_house(tmp_path)
    async with McpTestClient(app, era="modern") as c:
        names = {t["name"] for t in await c.list_tools()}
        assert {"kid_hello", "kid_deep_ping", "far_ping", "count"} <= names
        assert (await c.call_tool("kid_hello", {}))["content"][0]["text"] == "hello from child"
        assert app.started and app.composition is not None and len(app.composition.mounts) == 2
        found = holders_of_an_app(app)
    assert not found, "parts that hold an app (hand them the Seam or what they use):\n" + "\n".join(found)


def test_the_walk_finds_a_part_holding_the_app() -> None:
    app = McpApp("x", settings=Settings.from_env({}))
    assert holders_of_an_app(app) == []
    app.stores.probes.append(lambda: app)  # type: ignore[arg-type,return-value]  # the user's closure: theirs
    assert holders_of_an_app(app) == []
    app.stores.probes.append(functools.partial(print, app))  # type: ignore[arg-type]
    assert holders_of_an_app(app) == ["app.stores.probes[1].args[0] (partial)"]
    app.stores.probes.clear()
    app.seam.redis = app  # a part given the app
    assert holders_of_an_app(app) == ["app.seam.redis (Seam)"]
