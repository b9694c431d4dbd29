"""Every ```python block of README.md and docs/*.md runs (the rule is in tests/docs/mdexec.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from .mdexec import DocExampleError, check_fences, python_blocks, run_file, run_text

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GUIDES = {"context.md", "state.md", "asking-the-caller.md", "consent-gates.md", "errors.md", "enrichment.md",
          "content.md", "notifications.md", "testing.md", "deployment.md", "middleware.md", "auth.md"}


def test_every_guide_exists_and_has_runnable_examples() -> None:
    names = {p.name for p in DOCS}
    assert names >= GUIDES, f"missing guides: {sorted(GUIDES - names)}"
    for path in DOCS:
        assert python_blocks(path.read_text(encoding="utf-8")), f"{path.name} has no ```python example"


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_fences_are_labelled(path: Path) -> None:
    assert check_fences(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))) == []


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_examples_run(path: Path) -> None:
    run_file(path, ROOT)


# -- the runner itself: a broken example must fail, and the rules hold ---------------------------

def test_a_broken_example_fails_with_its_file_and_line() -> None:
    text = "# Guide\n\n```python\nx = 1\n```\n\nProse.\n\n```python\nassert x == 2, 'wrong'\n```\n"
    with pytest.raises(DocExampleError) as info:
        run_text(text, "guide.md")
    message = str(info.value)
    assert "guide.md: the example at line 10 failed" in message
    assert 'File "guide.md", line 10' in message and "AssertionError: wrong" in message


def test_blocks_share_one_namespace_and_one_loop_and_await_works() -> None:
    text = ("```python\nimport asyncio\nloop = asyncio.get_running_loop()\n```\n"
            "```text\nnot python at all\n```\n"
            "```python\nawait asyncio.sleep(0)\nassert asyncio.get_running_loop() is loop\nseen = True\n```\n")
    assert run_text(text, "loop.md")["seen"] is True


def test_unlabelled_and_near_miss_fences_are_refused() -> None:
    with pytest.raises(DocExampleError, match="unlabelled code fence"):
        run_text("```\nprint('hidden')\n```\n", "a.md")
    with pytest.raises(DocExampleError, match="use ```python"):
        run_text("```py\nprint('hidden')\n```\n", "b.md")


def test_a_block_that_leaves_a_process_running_fails() -> None:
    text = ("```python\nimport subprocess, sys\n"
            "proc = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
            "LEAKED.append(proc)\n```\n")
    leaked: list[Any] = []
    try:
        with pytest.raises(DocExampleError, match="child processes"):
            run_text(text, "leak.md", preset={"LEAKED": leaked})
    finally:
        for proc in leaked:
            proc.kill()
            proc.wait()
    assert leaked


def test_the_environment_and_working_directory_are_isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SESSION_MODE", "stateless")
    monkeypatch.delenv("MCP_LOG_LEVEL", raising=False)
    text = ("```python\nimport os\nfrom mcpcore import Settings\n"
            "assert Settings.from_env().session_mode is None\nos.environ['MCP_LOG_LEVEL'] = 'debug'\n"
            "open('scratch.txt', 'w').close()\n```\n")
    run_text(text, "env.md")
    assert os.environ["MCP_SESSION_MODE"] == "stateless" and "MCP_LOG_LEVEL" not in os.environ
    assert not Path("scratch.txt").exists()


# -- links between the documents ---------------------------------------------------------------

_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a markdown file."""
    out = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_relative_links_resolve(path: Path) -> None:
    broken = []
    for m in _LINK.finditer(path.read_text(encoding="utf-8")):
        target = m["target"]
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in _anchors(dest)):
            broken.append(target)
    assert broken == [], f"{path.name}: broken links {broken}"


def test_testing_guide_lists_every_mock_context_option() -> None:
    import inspect

    from mcpcore.testing import create_mock_context

    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    section = text[text.index("## `create_mock_context`"):text.index("## `run_tool_contract`")]
    cells = re.findall(r"^\| ([^|]+) \|", section, re.MULTILINE)
    documented = {name for cell in cells for name in re.findall(r"`(\w+)`", cell)}
    assert set(inspect.signature(create_mock_context).parameters) <= documented
