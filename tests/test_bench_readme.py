"""The README's benchmark section is the committed run's, and the updater touches nothing else."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.harness.readme import END, START, render_section, update_readme

ROOT = Path(__file__).resolve().parents[1]


def _report() -> dict:  # type: ignore[type-arg]
    return json.loads((ROOT / "docs" / "bench" / "results.json").read_text())


def test_readme_shows_the_committed_run() -> None:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(START):text.index(END) + len(END)]
    assert section == render_section(_report())
    assert "![requests per second" in section and "| issue 9 target |" in section


def test_update_replaces_only_the_marked_section(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nbefore\n\n{START}\nold numbers\n{END}\n\nafter\n")
    assert update_readme(_report(), readme)
    text = readme.read_text()
    assert text.startswith("# Title\n\nbefore\n\n" + START) and text.endswith(END + "\n\nafter\n")
    assert "old numbers" not in text and "| tools/call, 2026-07-28, JSON (`call_2026`) |" in text
    plain = tmp_path / "PLAIN.md"
    plain.write_text("no markers\n")
    assert not update_readme(_report(), plain) and plain.read_text() == "no markers\n"


def test_inprocess_driver_measures_every_app_on_both_eras() -> None:
    import asyncio

    from benchmarks.inprocess import MODULES, measure

    for server in MODULES:
        for era in ("2026", "2025"):
            us = asyncio.run(measure(server, era, 50, 0))
            assert 0 < us < 10_000, (server, era, us)



def test_section_renders_the_tm_workload_and_the_machine_load() -> None:
    # The committed TM-style run (docs/bench/tm/): the section make bench writes gives its table.
    report = json.loads((ROOT / "docs" / "bench" / "tm" / "results.json").read_text())
    section = render_section(report)
    tm = report["results"]["tm_session"]["servers"]
    assert tm["mcpcore"]["status"] == "ok"
    assert f"| a full session per tool call (published form) | {tm['mcpcore']['rps']:,.0f} (" in section
    assert "| sessionless 2026-07-28 calls |" in section
    # Every other server's figure is its req/s over mcpcore's, from the same run.
    sdk = tm["sdk"]
    assert f"{sdk['rps']:,.0f} ({sdk['rps'] / tm['mcpcore']['rps']:.2f}x)" in section
    machine = report["meta"]["machine"]
    assert f"load average {machine['loadavg_start'][0]:.1f} at the start" in section
