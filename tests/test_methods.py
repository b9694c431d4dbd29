"""The method table (mcpcore.protocol.methods) is the one list of methods: every method an app
serves, with tasks and skills on, has its row, era and gate; every middleware hook wraps a row."""

from __future__ import annotations

from pathlib import Path

from mcpcore import McpApp, Middleware, Settings, tool
from mcpcore.middleware.base import HOOKS
from mcpcore.protocol.methods import BY_NAME, METHODS
from mcpcore.protocol.versions import Era


@tool(task="optional")
async def slow() -> str:
    """A task tool, so the app serves tasks/*."""
    return "done"


def test_every_served_method_has_its_row(tmp_path: Path) -> None:
    skill = tmp_path / "demo"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: A demo skill.\n---\nBody.\n")
    app = McpApp("methods", "1.0", tools=[slow], skills=tmp_path, settings=Settings.from_env({}))
    d = app.dispatcher
    served = {*d._handlers, *d._lists}
    assert served - set(BY_NAME) == set(), "methods served without a row in protocol/methods.py"
    for name in served:
        row = BY_NAME[name]
        assert d._eras[name] == row.era, name
        assert d._gates.get(name) == row.gate, name
        gated_on = row.gate is None or row.gate in d.capabilities()
        for era in (Era.LEGACY, Era.MODERN):
            assert d.supports(name, era) == (row.era in (None, era) and gated_on), (name, era)
    assert len({m.name for m in METHODS}) == len(METHODS)


def test_every_middleware_hook_wraps_a_row() -> None:
    hooks = {n for n in vars(Middleware) if n.startswith("on_") and n not in ("on_request", "on_notification")}
    assert set(HOOKS.values()) == hooks
    assert all(BY_NAME[m].hook == h for m, h in HOOKS.items())


def test_a_mirrored_name_is_a_named_parameter() -> None:
    for m in METHODS:
        assert not m.mirrored or m.names_by is not None, m.name
        assert m.names is None or m.names_by is not None, m.name
