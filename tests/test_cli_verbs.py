"""``mcpcore list``, ``call`` and ``inspect`` as subprocesses: against the example server under
uvicorn (both eras), an app run in process (module:app, no port) and a stdio server; JSON when
piped, readable on a terminal (a pseudo-terminal here); one-line errors, exit 2."""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.auth.test_http_auth import SECRET, token
from tests.servers import ROOT, free_port, run_server

pytestmark = pytest.mark.slow
STDIO = shlex.join([sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio"])
ENV = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with run_server() as url:
        yield url


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpcore", *args], cwd=ROOT, env={**ENV, **(env or {})},
                          capture_output=True, text=True, timeout=120)


def out_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def on_terminal(*args: str, answers: list[str] = ()) -> tuple[int, str]:  # type: ignore[assignment]
    """Run the CLI with stdin, stdout and stderr on a pseudo-terminal, typing ``answers`` as the
    prompts come; returns the exit code and everything it showed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "mcpcore", *args], cwd=ROOT, env=ENV, stdin=slave, stdout=slave,
                            stderr=slave, close_fds=True)
    os.close(slave)
    shown = b""
    pending = list(answers)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                shown += chunk
                if pending and shown.rstrip().endswith(b":"):
                    os.write(master, pending.pop(0).encode() + b"\n")
            elif proc.poll() is not None:
                break
        return proc.wait(30), shown.decode(errors="replace").replace("\r\n", "\n")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


# -- list -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_list_each_kind_from_a_url(server_url: str, era: str) -> None:
    tools = out_json(cli("list", server_url, "--era", era))
    assert {"search", "fetch_items", "test_awaited_questions"} <= {t["name"] for t in tools}
    assert all("inputSchema" in t for t in tools)
    prompts = out_json(cli("list", server_url, "prompts", "--era", era))
    assert "test_prompt_with_arguments" in {p["name"] for p in prompts}
    resources = out_json(cli("list", server_url, "resources", "--era", era))
    assert "test://static-text" in {r["uri"] for r in resources}
    templates = out_json(cli("list", server_url, "templates", "--era", era))
    assert "test://template/{id}/data" in {t["uriTemplate"] for t in templates}


def test_list_an_app_in_process_and_a_stdio_server() -> None:
    proc = cli("list", "examples.everything:app")
    assert proc.returncode == 0 and proc.stderr == ""  # the app's startup lines stay quiet
    in_process = {t["name"] for t in json.loads(proc.stdout)}
    over_stdio = {t["name"] for t in out_json(cli("list", "--stdio", STDIO))}
    assert "search" in in_process and in_process == over_stdio
    assert {p["name"] for p in out_json(cli("list", "prompts", "--stdio", STDIO, "--era", "legacy"))} >= {
        "test_simple_prompt"}


def test_on_a_terminal_list_prints_one_entry_per_definition() -> None:
    code, shown = on_terminal("list", "examples.everything:app")
    assert code == 0
    assert "search(query: string, limit?: integer)\n    Search the catalog" in shown


# -- call -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_call_with_key_values_json_and_a_task(server_url: str, era: str) -> None:
    result = out_json(cli("call", server_url, "search", "query=red", "limit=1", "--era", era))
    assert result["structuredContent"] == {"items": ["red widget"], "effectiveQuery": "red", "totalCount": 2}
    result = out_json(cli("call", server_url, "search", "--json", '{"query": "widget", "limit": 5}', "limit=1",
                          "--era", era))
    assert result["structuredContent"]["items"] == ["red widget"]  # key=value wins over --json
    # A string parameter keeps "007" (the schema wants a string); the number parameter gets 0.2.
    task = out_json(cli("call", server_url, "slow_compute", "seconds=0.2", "label=007", "--task", "--era", era))
    assert task["content"][0]["text"] == "Computed 007 in 0.2s"
    failed = cli("call", server_url, "fetch_items", 'ids=["9"]', "--era", era)
    assert failed.returncode == 1 and json.loads(failed.stdout)["isError"] is True


def test_call_over_stdio_in_each_era() -> None:
    for era in ("modern", "legacy"):
        result = out_json(cli("call", "--stdio", STDIO, "search", "query=gadget", "--era", era))
        assert result["structuredContent"]["items"] == ["green gadget", "red gadget"], era


def test_on_a_terminal_call_shows_progress_text_and_asks_the_form() -> None:
    code, shown = on_terminal("call", "examples.everything:app", "test_tool_with_progress")
    assert code == 0
    assert "progress 0/100: step 0\nprogress 50/100: step 50\nprogress 100/100: step 100\n" in shown
    assert shown.rstrip().endswith("Tool with progress executed successfully")
    code, shown = on_terminal("call", "examples.everything:app", "awaited_booking", "--task", answers=["Ada", "y"])
    assert code == 0, shown
    assert "Who is the booking for?" in shown and "Book a room for Ada?" in shown
    assert "task: input_required" in shown and shown.rstrip().endswith("Booked for Ada")


# -- inspect ----------------------------------------------------------------------------------------

def test_inspect_a_url_an_app_and_a_stdio_server(server_url: str) -> None:
    report = out_json(cli("inspect", server_url))
    assert report["serverInfo"]["name"] == "mcpcore-everything" and report["protocolVersion"] == "2026-07-28"
    assert report["serverCard"]["transports"][0]["url"] == server_url
    assert "tools" in report["capabilities"] and "lint" not in report
    search = next(t for t in report["tools"] if t["name"] == "search")
    assert "inputSchema" in search and "outputSchema" in search
    assert report["resourceTemplates"] and report["prompts"] and report["resources"]
    local = out_json(cli("inspect", "examples.everything:app", "--era", "legacy"))
    assert local["era"] == "legacy" and local["lint"]["passed"] is True and local["lint"]["definitions"] > 40
    assert out_json(cli("inspect", "--stdio", STDIO))["serverCard"] is None
    code, shown = on_terminal("inspect", "examples.everything:app")
    assert code == 0 and "mcpcore-everything 1.0.0  (2026-07-28, modern era)" in shown
    assert "\nlint (0 findings)" in shown and "      inputSchema: {" in shown


# -- errors: one line, the fix, exit 2 --------------------------------------------------------------

def test_mistakes_are_one_line_with_the_fix(server_url: str) -> None:
    cases = [
        (("call", server_url, "serch", "query=red"), "has no tool 'serch': did you mean 'search'?"),
        (("list", "nowhere"), "no module named 'nowhere'"),
        (("list", "not a target!"), "is not a server: give a URL"),
        (("list", "examples.everything:McpApp"), "not an McpApp"),
        (("call", server_url, "search", "query"), "write arguments as key=value"),
        (("call", server_url, "search", "--json", "{oops"), "--json is not JSON"),
        (("list", f"http://127.0.0.1:{free_port()}/mcp"), "is the server running?"),
        (("list", "--stdio", STDIO, "--token", "t"), "--token applies to a URL"),
    ]
    for args, expected in cases:
        proc = cli(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], (args, proc.stderr)
        assert lines[0].startswith(f"mcpcore {args[0]}: ")


def test_a_server_that_wants_a_token() -> None:
    with run_server(env={"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SECRET}) as url:
        refused = cli("list", url)
        assert refused.returncode == 2
        assert "wants credentials: sign in with --oauth, or pass --token TOKEN" in refused.stderr
        assert "search" in {t["name"] for t in out_json(cli("list", url, "--token", token()))}


def test_every_option_has_help() -> None:
    from mcpcore.cli import main

    for verb in ("list", "call", "inspect", "dev", "install"):
        with pytest.raises(SystemExit):
            main([verb, "--help"])
    import argparse

    from mcpcore.commands import add_verbs

    parser = argparse.ArgumentParser()
    add_verbs(parser.add_subparsers(dest="command"))
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, verb_parser in sub.choices.items():
        for action in verb_parser._actions:
            assert action.help, f"mcpcore {name}: {action.dest} has no help"
