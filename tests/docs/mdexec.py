"""Run the ```python blocks of a markdown file, the way ``tests/docs`` checks README.md and docs/*.md.

The rule (also stated in README.md, "Code examples"):

- Every fenced block labelled ``python`` runs. Anything that must not run (shell commands,
  configuration, output, wire messages) uses another label: ``bash``, ``text``, ``json``, ...
  An unlabelled fence, or a near miss such as ``py`` or ``python3``, is an error rather than a
  silently skipped example.
- The blocks of one file run in order in one fresh module namespace, so a guide can define a tool
  in one block and call it in the next. Files never share anything.
- Blocks run as in ``python -m asyncio``: inside one running event loop per file, so top-level
  ``await`` works (and ``asyncio.run`` does not), and an app started in one block can be used in
  the next. Each block has 30 seconds.
- Examples run in a temporary working directory, with every setting variable
  (``Settings.variables()``, ``OTEL_*``) removed from the environment, and the ``mcpcore`` loggers
  restored afterwards. A block must clean up what it starts: a child process or a non-daemon thread
  still alive after the file is a failure.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import linecache
import logging
import os
import re
import sys
import tempfile
import threading
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DocExampleError", "Fence", "check_fences", "fences", "python_blocks", "run_file", "run_text"]

RUNNABLE = "python"
OTHER_LANGUAGES = frozenset({"bash", "sh", "console", "text", "json", "yaml", "toml", "dockerfile", "ini",
                             "nginx", "diff", "http", "markdown"})
NEAR_MISSES = frozenset({"py", "python3", "pycon", "python-repl", "ipython", "pytb", "py3"})
BLOCK_TIMEOUT = 30.0
_OPEN = re.compile(r"^(?P<indent>[ ]{0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True, slots=True)
class Fence:
    """One fenced block: its label (first word of the info string), first code line, and code."""

    lang: str
    line: int
    code: str



class DocExampleError(AssertionError):
    """A documentation example failed; the message names the file and line."""


def fences(text: str) -> list[Fence]:
    """Every fenced code block of ``text`` (CommonMark backtick and tilde fences)."""
    out: list[Fence] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None:
            i += 1
            continue
        fence = m["fence"]
        lang = (m["info"].strip().split() or [""])[0].lower()
        body: list[str] = []
        j = i + 1
        closing = re.compile(rf"^[ ]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        while j < len(lines) and not closing.match(lines[j]):
            body.append(lines[j])
            j += 1
        indent = len(m["indent"])
        code = "\n".join(ln[indent:] if ln[:indent].isspace() else ln for ln in body)
        out.append(Fence(lang, i + 2, code + "\n"))
        i = j + 1
    return out


def check_fences(text: str, name: str) -> list[str]:
    """Problems with the labels of ``text``'s fences (empty when every fence is runnable or clearly not)."""
    problems = []
    for f in fences(text):
        if f.lang == "":
            problems.append(f"{name}:{f.line - 1}: unlabelled code fence; label it ```python (runs in the docs "
                            "tests) or ```text / ```bash (does not)")
        elif f.lang in NEAR_MISSES:
            problems.append(f"{name}:{f.line - 1}: fence labelled {f.lang!r}; use ```python (runs) or ```text")
        elif f.lang != RUNNABLE and f.lang not in OTHER_LANGUAGES:
            problems.append(f"{name}:{f.line - 1}: unknown fence label {f.lang!r}; add it to OTHER_LANGUAGES in "
                            "tests/docs/mdexec.py if it is not Python")
    return problems


def python_blocks(text: str) -> list[Fence]:
    """The blocks that run."""
    return [f for f in fences(text) if f.lang == RUNNABLE]


def _setting_variables() -> set[str]:
    from mcpcore import Settings

    return {var for var, _field, _default in Settings.variables()} | {"MCP_EXAMPLE_SANDBOX"}


@contextlib.contextmanager
def _sandbox() -> Iterator[Path]:
    """A temp working directory, a clean environment, and mcpcore's logging state restored."""
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    loggers = {name: logging.getLogger(name) for name in ("mcpcore", *[
        n for n in logging.root.manager.loggerDict if n.startswith("mcpcore.")])}
    saved_logs = {n: (lg.level, list(lg.handlers), lg.propagate, lg.disabled) for n, lg in loggers.items()}
    drop = _setting_variables()
    for var in list(os.environ):
        if var in drop or var.startswith("OTEL_"):
            del os.environ[var]
    with tempfile.TemporaryDirectory(prefix="mcpcore-docs-") as tmp:
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            for n, (level, handlers, propagate, disabled) in saved_logs.items():
                lg = logging.getLogger(n)
                lg.setLevel(level)
                lg.handlers[:] = handlers
                lg.propagate = propagate
                lg.disabled = disabled


def _children() -> set[int]:
    """PIDs of this process's live children (Linux ``/proc``; empty elsewhere)."""
    me = str(os.getpid())
    found: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me and fields[0] != "Z":
            found.add(int(entry))
    return found


def _compile(block: Fence, name: str) -> types.CodeType:
    tree = ast.parse(block.code, filename=name, mode="exec", type_comments=False)
    try:  # pytest's assertion rewriting, so a failing ``assert`` in an example explains itself
        from _pytest.assertion.rewrite import rewrite_asserts
    except ImportError:  # pragma: no cover - the runner works without pytest too
        pass
    else:
        rewrite_asserts(tree, block.code.encode())
    ast.increment_lineno(tree, block.line - 1)
    code: types.CodeType = compile(tree, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    return code


async def _await_with_timeout(coro: Any) -> Any:
    return await asyncio.wait_for(coro, BLOCK_TIMEOUT)


async def _run_block(code: types.CodeType, namespace: dict[str, Any]) -> None:
    """Run one block on the running loop, as ``python -m asyncio`` runs what is typed into it."""
    if code.co_flags & inspect.CO_COROUTINE:
        await eval(code, namespace)
    else:
        exec(code, namespace)


def run_text(text: str, name: str, preset: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every ```python block of ``text`` in order, in one namespace; return the namespace.

    ``preset`` adds names to that namespace before the first block (for the runner's own tests).

    Raises:
        DocExampleError: a block raised (the message names ``name``, the block's first line and the
            traceback, whose line numbers are the markdown file's), or something a block started is
            still running afterwards.
    """
    problems = check_fences(text, name)
    if problems:
        raise DocExampleError("\n".join(problems))
    blocks = python_blocks(text)
    module_name = "docs_example_" + re.sub(r"\W", "_", Path(name).stem)
    module = types.ModuleType(module_name)
    module.__file__ = name
    sys.modules[module_name] = module
    namespace = module.__dict__
    namespace.update(preset or {})
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    threads_before = {t.ident for t in threading.enumerate()}
    children_before = _children()
    try:
        with _sandbox(), asyncio.Runner() as runner:
            try:
                for block in blocks:
                    try:
                        runner.run(_await_with_timeout(_run_block(_compile(block, name), namespace)))
                    except BaseException as exc:
                        if isinstance(exc, KeyboardInterrupt):
                            raise
                        detail = "".join(traceback.format_exception(exc))
                        raise DocExampleError(f"{name}: the example at line {block.line} failed:\n{detail}") from exc
            finally:
                runner.run(_shutdown_apps(namespace))
    finally:
        sys.modules.pop(module_name, None)
    leaked = [t for t in threading.enumerate() if t.ident not in threads_before and t.is_alive() and not t.daemon]
    for t in leaked:  # a worker told to stop when the loop closed may need a moment on a loaded machine
        t.join(timeout=5)
    leaked = [t for t in leaked if t.is_alive()]
    if leaked:
        raise DocExampleError(f"{name}: examples left threads running: {[t.name for t in leaked]}")
    children = _children() - children_before
    if children:
        raise DocExampleError(f"{name}: examples left child processes running: {sorted(children)}")
    return namespace


async def _shutdown_apps(namespace: dict[str, Any]) -> None:
    """Stop any McpApp an example started and left running (an in-process client starts its app)."""
    from mcpcore import McpApp

    for value in list(namespace.values()):
        if isinstance(value, McpApp):
            with contextlib.suppress(Exception):
                await value.shutdown()


def run_file(path: Path, root: Path) -> dict[str, Any]:
    """:func:`run_text` on a file, named relative to ``root`` in messages."""
    return run_text(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
