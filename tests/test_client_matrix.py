"""The real-client matrix: every official client, in each era it speaks, over HTTP and stdio,
against the example server. Each run lists the tools, makes a successful call, every kind of
failing call, reads a resource and gets a prompt, and the outcomes are compared with the
expected row in one assertion.

Clients: TypeScript SDK 1.32 (``@modelcontextprotocol/sdk``, 2025 era only), TypeScript client
2.x (``@modelcontextprotocol/client``), the Python ``mcp`` client 2.3 and the Inspector 2.12 CLI.
A tool error must reach each of them as an ``isError`` result whose text carries the message and
the recovery hint, with the envelope in ``_meta["dev.mcpcore/error"]``; none may throw. The one
failure that is a JSON-RPC error by the spec is a capability the 2026-07-28 request did not
declare (``-32021``, checked by the official conformance suite); its message carries the hint.

The same clients, over HTTP in each era they speak, also list and call tools generated from a
FastAPI app's routes (mcpcore.openapi; tests/apps/openapi_fastapi.py): path, query and body
arguments, a self-referencing model, an answer that departs from its declared schema (which the
clients' own output validation must accept), an API error and invalid arguments.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mcpcore.errors import TOOL_ERROR_META
from tests.servers import ROOT, run_server, serve
from tests.tools import ensure_node

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "js" / "matrix_client.mjs"
STDIO_SERVER = [sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio"]
INVALID_ARGS_HINT = "Check the tool's inputSchema and call it again with corrected arguments."
# What a client shows of the 2026-07-28 refusal, a JSON-RPC error: its message, which ends with the hint.
MODERN_REFUSALS = {
    name: (f"This request needs the client capability {cap}, which the request did not declare. "
           f"Recovery: Declare `{cap}` in the request's client capabilities, from a client that can answer, "
           "and call again.")
    for name, cap in (("refused capability", "sampling"), ("awaited ask refused", "elicitation.form"))}


@dataclass(frozen=True)
class Failure:
    """What a failing call must show: the envelope's code and reason, the message and the hint."""

    code: int
    reason: str | None
    message: str
    hint: str | None = None


@dataclass(frozen=True)
class Case:
    name: str
    step: dict[str, Any]
    failure: Failure | None = None
    check: dict[str, Any] = field(default_factory=dict)


CASES = [
    Case("list tools", {"op": "list"}, check={"names": ["search", "fetch_items", "test_error_handling"]}),
    Case("success", {"op": "call", "name": "search", "arguments": {"query": "red"}},
         check={"structured": {"items": ["red widget", "red gadget"], "effectiveQuery": "red", "totalCount": 2}}),
    Case("handler raises", {"op": "call", "name": "delete_path", "arguments": {"path": "../outside"}},
         Failure(-32005, "outside_sandbox", "'../outside' is outside the sandbox.",
                 "Give a path relative to the sandbox root, without '..' segments or a leading '/'.")),
    Case("handler raises, no contract", {"op": "call", "name": "test_error_handling", "arguments": {}},
         Failure(-32603, None, "This tool intentionally returns an error for testing")),
    Case("invalid args", {"op": "call", "name": "search", "arguments": {"query": "red", "limit": 500}},
         Failure(-32602, "invalid_arguments", "Invalid arguments: limit: Input should be less than or equal to 50",
                 INVALID_ARGS_HINT)),
    Case("missing args", {"op": "call", "name": "search", "arguments": {}},
         Failure(-32602, "invalid_arguments", "Invalid arguments: query: Field required", INVALID_ARGS_HINT)),
    Case("unknown key", {"op": "call", "name": "search", "arguments": {"query": "red", "colour": "blue"}},
         Failure(-32602, "invalid_arguments", "Unknown argument(s): colour.", INVALID_ARGS_HINT)),
    Case("ctx.fail", {"op": "call", "name": "fetch_items", "arguments": {"ids": ["9"]}},
         Failure(-32001, "no_match", "No items match 1 ids", "Broaden the query or check the spelling and try again.")),
    Case("refused capability", {"op": "call", "name": "test_missing_capability", "arguments": {}},
         Failure(-32600, "client_capability_missing",
                 "The client did not declare the sampling capability this request needs.",
                 "Reconnect with a client that declares the `sampling` capability.")),
    Case("awaited ask refused", {"op": "call", "name": "test_awaited_questions", "arguments": {}},
         Failure(-32600, "client_capability_missing",
                 "The client did not declare the elicitation.form capability this request needs.",
                 "Reconnect with a client that declares the `elicitation.form` capability.")),
    Case("resource read", {"op": "read", "uri": "test://template/5/data"}, check={"text": '"id":"5"'}),
    Case("prompt get", {"op": "prompt", "name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}},
         check={"text": "Prompt with arguments: arg1='a', arg2='b'"}),
]


def expected(era: str) -> dict[str, str]:
    """The row every client must produce in ``era``."""
    row = {c.name: "tool error" if c.failure else "ok" for c in CASES}
    if era == "modern":  # -32021 is a JSON-RPC error on 2026-07-28 (HTTP 400, data.requiredCapabilities)
        for name in MODERN_REFUSALS:
            row[name] = "protocol error -32021"
    return row


def outcome(case: Case, seen: dict[str, Any], *, exit_code: int | None = None) -> str:
    """Classify what the client handed back for ``case``: ``ok``, ``tool error``, ``protocol error
    <code>``, or a sentence saying what is wrong."""
    if "error" in seen:
        err = seen["error"]
        if case.name in MODERN_REFUSALS and MODERN_REFUSALS[case.name] in str(err.get("message")):
            code = err.get("code")
            return "protocol error -32021" if code in (-32021, None) else f"protocol error {code}"
        return f"threw: {err.get('message')}"
    result = seen["result"]
    failure = case.failure
    if failure is None:
        if result.get("isError"):
            return f"unexpected tool error: {result.get('content')}"
        if "names" in case.check and not set(case.check["names"]) <= set(result.get("names", [])):
            return f"tools missing from {result.get('names')}"
        if "structured" in case.check and result.get("structuredContent") != case.check["structured"]:
            return f"structuredContent {result.get('structuredContent')!r}"
        if "text" in case.check and case.check["text"] not in json.dumps(result, ensure_ascii=False).replace(
                '\\"', '"'):
            return f"{case.check['text']!r} not in {result!r}"
        return "ok" if exit_code in (None, 0) else f"ok, but exit {exit_code}"
    if result.get("isError") is not True:
        return f"not an error: {result!r}"
    if "structuredContent" in result:
        return "structuredContent on an error"
    texts = [b.get("text", "") for b in result.get("content", []) if b.get("type") == "text"]
    text = "\n".join(texts)
    if not text.startswith(f"Error: {failure.message}"):
        return f"text {text!r} lacks the message"
    if failure.hint and not text.endswith(f"\n\nRecovery: {failure.hint}"):
        return f"text {text!r} lacks the hint"
    envelope = (result.get("_meta") or {}).get(TOOL_ERROR_META) or {}
    data = envelope.get("data") or {}
    if envelope.get("code") != failure.code or data.get("reason") != failure.reason or not data.get("requestId"):
        return f"envelope {envelope!r}"
    if failure.hint and (data.get("recovery") or {}).get("hint") != failure.hint:
        return f"envelope hint {data.get('recovery')!r}"
    return "tool error" if exit_code in (None, 5) else f"tool error, but exit {exit_code}"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with run_server() as url:
        yield url


def _target(transport: str, url: str) -> dict[str, Any]:
    if transport == "http":
        return {"url": url}
    return {"command": STDIO_SERVER[0], "args": STDIO_SERVER[1:], "cwd": str(ROOT)}


# -- TypeScript: SDK 1.32 and client 2.x -------------------------------------------------------

@pytest.mark.parametrize(("sdk", "era", "transport"), [
    ("sdk1", "legacy", "http"), ("sdk1", "legacy", "stdio"),
    ("sdk2", "legacy", "http"), ("sdk2", "modern", "http"),
    ("sdk2", "legacy", "stdio"), ("sdk2", "modern", "stdio"),
])
def test_typescript(server_url: str, sdk: str, era: str, transport: str) -> None:
    modules = ensure_node.ensure("client")
    plan = {"sdk": sdk, "era": era, **_target(transport, server_url), "steps": [c.step for c in CASES]}
    proc = subprocess.run([str(ensure_node.node_bin() / "node"), str(SCRIPT)], input=json.dumps(plan),
                          env={**ensure_node.env(), "MCP_CLIENT_MODULES": str(modules)},
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if transport == "http":
        assert out["version"] == ("2026-07-28" if era == "modern" else "2025-11-25")
    row = {c.name: outcome(c, seen) for c, seen in zip(CASES, out["steps"], strict=True)}
    assert row == expected(era)


# -- Python: the official mcp client 2.3 -------------------------------------------------------

async def _python_steps(target: Any, era: str, cases: list[Case] = CASES) -> list[dict[str, Any]]:
    from mcp import Client, MCPError

    seen: list[dict[str, Any]] = []
    async with Client(target, mode="2026-07-28" if era == "modern" else "legacy") as client:
        assert client.protocol_version == ("2026-07-28" if era == "modern" else "2025-11-25")
        for case in cases:
            step = case.step
            try:
                if step["op"] == "list":
                    listed = await client.list_tools()
                    seen.append({"result": {"names": [t.name for t in listed.tools]}})
                    continue
                if step["op"] == "call":
                    got: Any = await client.call_tool(step["name"], step["arguments"])
                elif step["op"] == "read":
                    got = await client.read_resource(step["uri"])
                else:
                    got = await client.get_prompt(step["name"], step["arguments"])
                seen.append({"result": got.model_dump(mode="json", by_alias=True, exclude_none=True)})
            except MCPError as exc:
                seen.append({"error": {"code": exc.code, "message": exc.message}})
    return seen


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_python(server_url: str, era: str, transport: str) -> None:
    from mcp import StdioServerParameters

    target: Any = server_url if transport == "http" else StdioServerParameters(
        command=STDIO_SERVER[0], args=STDIO_SERVER[1:], cwd=str(ROOT))
    steps = await _python_steps(target, era)
    row = {c.name: outcome(c, seen) for c, seen in zip(CASES, steps, strict=True)}
    assert row == expected(era)


# -- the Inspector 2.12 CLI --------------------------------------------------------------------

def _inspector_args(step: dict[str, Any]) -> list[str]:
    if step["op"] == "list":
        return ["--method", "tools/list"]
    if step["op"] == "call":
        return ["--method", "tools/call", "--tool-name", step["name"], "--tool-args-json",
                json.dumps(step["arguments"])]
    if step["op"] == "read":
        return ["--method", "resources/read", "--uri", step["uri"]]
    return ["--method", "prompts/get", "--prompt-name", step["name"], "--prompt-args",
            *(f"{k}={v}" for k, v in step["arguments"].items())]


# The CLI's own 15 s to connect is too short for a stdio server started four at a time beside a
# second stream of tests on two cores (seen: make test's parallel phase); the test's timeout stays 120 s.
CONNECT_TIMEOUT = ["--connect-timeout", "60000"]


def _inspector(args: list[str], era: str, transport: str, url: str, home: Path) -> subprocess.CompletedProcess[str]:
    launcher = ensure_node.ensure("inspector") / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / \
        "build" / "index.js"
    # The URL goes first: --prompt-args takes every following word that is not an option.
    url_arg, command = ([url], []) if transport == "http" else ([], ["--cwd", str(ROOT), "--", *STDIO_SERVER])
    env = {**ensure_node.env(), "HOME": str(home), "MCP_CATALOG_PATH": str(home / "catalog.json"),
           "MCP_CLIENT_CONFIG_PATH": str(home / "client.json")}
    return subprocess.run([str(ensure_node.node_bin() / "node"), str(launcher), "--cli", *url_arg, "--format", "json",
                           "-q", "--protocol-era", era, *CONNECT_TIMEOUT, *args, *command], env=env,
                          capture_output=True, text=True, timeout=120, cwd=home)


def _inspector_row(cases: list[Case], era: str, transport: str, url: str, home: Path) -> dict[str, Any]:
    """Each case as its own Inspector CLI run (a client of its own), four at a time, each in a
    home of its own: the outcome per case name."""

    def one(i: int) -> Any:
        folder = home / f"case-{i}"
        folder.mkdir()
        proc = _inspector(_inspector_args(cases[i].step), era, transport, url, folder)
        return outcome(cases[i], _inspector_seen(proc), exit_code=proc.returncode)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip((c.name for c in cases), pool.map(one, range(len(cases))), strict=True))


def _inspector_seen(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    if proc.stdout.strip():
        result = json.loads(proc.stdout)["result"]
        if "tools" in result:
            return {"result": {"names": [t["name"] for t in result["tools"]]}}
        return {"result": result}
    err = json.loads(proc.stderr.strip().splitlines()[-1])["error"]
    return {"error": {"code": None, "message": err.get("message")}}


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector(server_url: str, era: str, transport: str, tmp_path: Path) -> None:
    strict = _inspector(["--method", "tools/list", "--strict"], era, transport, server_url, tmp_path)
    assert strict.returncode == 0, strict.stderr[-2000:]  # no schema portability finding at all
    assert json.loads(strict.stdout)["result"]["tools"] and "schemaFindings" not in json.loads(strict.stdout)
    assert _inspector_row(CASES, era, transport, server_url, tmp_path) == expected(era)


# -- tools generated from a FastAPI app's routes (mcpcore.openapi), called in process ----------

OPENAPI_CASES = [
    Case("list generated tools", {"op": "list"},
         check={"names": ["get_item", "create_item", "put_category", "drifting", "stream_lines"]}),
    Case("path and query", {"op": "call", "name": "get_item", "arguments": {"item_id": 1}},
         check={"structured": {"id": 1, "name": "lamp", "price": 12.5, "tags": ["home"], "owner": None}}),
    Case("body", {"op": "call", "name": "create_item", "arguments": {"name": "desk", "price": 5, "dry_run": True}},
         check={"text": '"name":"desk"'}),
    Case("cyclic model", {"op": "call", "name": "put_category",
                          "arguments": {"name": "a", "children": [{"name": "b", "children": []}]}},
         check={"structured": {"name": "a", "children": [{"name": "b", "children": []}]}}),
    Case("answer departing from its schema", {"op": "call", "name": "drifting", "arguments": {"item_id": 3}},
         check={"structured": {"id": 3, "status": "archived", "color": "red", "nested": {"deep": [1, 2]}}}),
    Case("API error", {"op": "call", "name": "get_item", "arguments": {"item_id": 404}},
         Failure(-32001, "api_error", 'GET /items/{item_id} answered 404 Not Found: {"detail":"no item 404"}',
                 "Nothing exists at these identifiers; check them (list or search first) and call again.")),
    Case("generated tool, invalid args", {"op": "call", "name": "get_item", "arguments": {"item_id": "one"}},
         Failure(-32602, "invalid_arguments", "Invalid arguments: item_id: should be of type integer",
                 INVALID_ARGS_HINT)),
]


@pytest.fixture(scope="module")
def openapi_url() -> Iterator[str]:
    """The FastAPI app of tests/apps/openapi_fastapi.py under uvicorn, its tools at /mcp/."""
    with serve("tests.apps.openapi_fastapi:app", health_path="/items/1") as (base, _):
        yield f"{base}/mcp/"


@pytest.mark.parametrize(("sdk", "era"), [("sdk1", "legacy"), ("sdk2", "legacy"), ("sdk2", "modern")])
def test_generated_tools_typescript(openapi_url: str, sdk: str, era: str) -> None:
    modules = ensure_node.ensure("client")
    plan = {"sdk": sdk, "era": era, "url": openapi_url, "steps": [c.step for c in OPENAPI_CASES]}
    proc = subprocess.run([str(ensure_node.node_bin() / "node"), str(SCRIPT)], input=json.dumps(plan),
                          env={**ensure_node.env(), "MCP_CLIENT_MODULES": str(modules)},
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    row = {c.name: outcome(c, seen) for c, seen in zip(OPENAPI_CASES, out["steps"], strict=True)}
    assert row == {c.name: "tool error" if c.failure else "ok" for c in OPENAPI_CASES}


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_generated_tools_python(openapi_url: str, era: str) -> None:
    steps = await _python_steps(openapi_url, era, OPENAPI_CASES)
    row = {c.name: outcome(c, seen) for c, seen in zip(OPENAPI_CASES, steps, strict=True)}
    assert row == {c.name: "tool error" if c.failure else "ok" for c in OPENAPI_CASES}


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_generated_tools_inspector(openapi_url: str, era: str, tmp_path: Path) -> None:
    http = ["--transport", "http"]  # the URL ends in /mcp/, from which the Inspector cannot tell
    strict = _inspector([*http, "--method", "tools/list", "--strict"], era, "http", openapi_url, tmp_path)
    assert strict.returncode == 0 and "schemaFindings" not in json.loads(strict.stdout), strict.stderr[-2000:]
    row = {}
    for case in OPENAPI_CASES:
        proc = _inspector([*http, *_inspector_args(case.step)], era, "http", openapi_url, tmp_path)
        row[case.name] = outcome(case, _inspector_seen(proc), exit_code=proc.returncode)
    assert row == {c.name: "tool error" if c.failure else "ok" for c in OPENAPI_CASES}
