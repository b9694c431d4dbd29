"""Hostile input: a property-based fuzzer over both eras (and one over request heads at the HTTP
server), depth and size limits, exhaustion by abandoned sessions, and draining on SIGTERM under
load."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpcore import JsonRpcErrorCode, McpApp, Settings, tool
from mcpcore.middleware import MemoryWindows, RateLimit
from mcpcore.testing import McpTestClient, tool_error

from .conftest import example_app
from .servers import PROCESSES, run_server

pytestmark = pytest.mark.anyio

FUZZ_EXAMPLES = int(os.environ.get("MCPCORE_FUZZ_EXAMPLES", "3000"))
METHODS = ["tools/call", "tools/list", "resources/read", "resources/list", "resources/templates/list", "prompts/get",
           "prompts/list", "completion/complete", "logging/setLevel", "ping", "server/discover",
           "subscriptions/listen", "resources/subscribe", "notifications/cancelled", "nope", ""]
TOOLS = ["search", "fetch_items", "test_x_mcp_header", "delete_path", "export_report", "test_elicitation", "nope"]

long_text = st.text(alphabet="abc/%.", min_size=250, max_size=600)  # around the bounds on ids, names, URIs
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30))
json_value = st.recursive(json_leaf, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                            st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                          max_leaves=12)
meta = st.one_of(st.none(), json_value, st.fixed_dictionaries({
    "io.modelcontextprotocol/protocolVersion": st.sampled_from(["2026-07-28", "2025-11-25", "x", ""]) | json_leaf,
    "io.modelcontextprotocol/clientCapabilities": json_value,
}, optional={"io.modelcontextprotocol/logLevel": json_value, "progressToken": json_value | long_text}))
params = st.one_of(json_value, st.fixed_dictionaries({}, optional={
    "_meta": meta, "name": st.sampled_from(TOOLS) | json_leaf | long_text, "arguments": json_value,
    "uri": json_value | long_text,
    "cursor": json_value, "inputResponses": json_value, "requestState": json_value, "level": json_value,
    "ref": json_value, "argument": json_value, "notifications": json_value}))
message = st.fixed_dictionaries({"jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_leaf},
                                optional={"id": json_leaf | long_text,
                                          "method": st.sampled_from(METHODS) | json_leaf | long_text,
                                          "params": params, "result": json_value, "error": json_value})
body = st.one_of(message.map(orjson.dumps), st.lists(message, max_size=3).map(orjson.dumps),
                 st.lists(st.sampled_from([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                           {"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
                          min_size=4, max_size=40).map(orjson.dumps),
                 st.binary(max_size=64), json_value.map(lambda v: orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS)))
header_value = st.one_of(st.none(), st.sampled_from(["2026-07-28", "2025-11-25", "2025-03-26", "bogus"]),
                         st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20))


@pytest.fixture(scope="module")
def fuzz_app() -> Any:
    return example_app(request_state_key="k" * 40, max_body_bytes=4096, max_batch_messages=16,
                       max_batch_response_bytes=32_768)


async def _one(app: Any, payload: bytes, hv: dict[str, str | None], session: bool) -> None:
    async with McpTestClient(app, initialize=session) as c:
        before = (await app.sessions.count(), app.services.state.provider._count)
        h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if session and c.session_id:
            h["mcp-session-id"] = c.session_id
        for k, v in hv.items():
            if v is not None:
                h[k] = v
        r = await c.post(payload, h)
        assert r.status_code != 500 and r.status_code < 600
        assert len(r.content) <= 32_768 + 4096  # a batch's answer stays within its budget (+ one part)
        if r.status_code != 202 and r.content and r.headers.get("content-type", "").startswith("application/json"):
            data = orjson.loads(r.content)
            assert isinstance(data, (dict, list))
            text = r.text
            assert "Traceback" not in text and "/work/" not in text and 'File "' not in text
        after = (await app.sessions.count(), app.services.state.provider._count)
        assert after == before


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(payload=body, pv=header_value, method=header_value, name=header_value, session=st.booleans(),
       accept=st.sampled_from(["application/json, text/event-stream", "*/*", "text/html", ""]))
def test_fuzzed_bodies_and_headers_never_500_or_change_stores(
        fuzz_app: Any, payload: bytes, pv: str | None, method: str | None, name: str | None, session: bool,
        accept: str) -> None:
    if b'"initialize"' in payload:
        return  # creating a session is the one allowed change
    hv = {"mcp-protocol-version": pv, "mcp-method": method, "mcp-name": name, "accept": accept or None}
    asyncio.run(_one(fuzz_app, payload, hv, session))


# -- rate-limit keys from caller strings ---------------------------------------------------------------

@tool
async def limited_tool() -> str:
    """Answer ok."""
    return "ok"


@tool(visible_to=lambda ctx: False)
async def unseen_tool() -> str:
    """Seen by nobody."""
    return "unseen"


@pytest.fixture(scope="module")
def limited_app() -> Any:
    limiter = RateLimit(2, per=3600, key=("identity", "tool"), windows=MemoryWindows(max_keys=50))
    app = McpApp("limited", tools=[limited_tool, unseen_tool], middleware=[limiter],
                 settings=Settings.from_env({}, max_batch_messages=64))

    async def fill() -> None:
        async with McpTestClient(app, era="modern") as c:
            assert [(await c.call_tool("limited_tool"))["content"][0]["text"] for _ in range(2)] == ["ok", "ok"]

    asyncio.run(fill())
    return app


tool_name = st.one_of(st.sampled_from(["limited_tool", "unseen_tool", "nope", ""]), st.text(max_size=40), long_text)


@settings(max_examples=max(FUZZ_EXAMPLES // 10, 50), deadline=None, suppress_health_check=list(HealthCheck))
@given(names=st.lists(tool_name | json_leaf, min_size=1, max_size=60), modern=st.booleans())
def test_fuzzed_tool_names_never_make_rate_limit_keys_nor_reset_a_window(
        limited_app: Any, names: list[Any], modern: bool) -> None:
    async def run() -> None:
        era = "modern" if modern else "legacy"
        async with McpTestClient(limited_app, era=era, protocol_version=None if modern else "2025-03-26") as c:
            calls = [{"jsonrpc": "2.0", "id": i, "method": "tools/call",
                      "params": c.envelope({"name": name, "arguments": {}})} for i, name in enumerate(names)]
            if modern:
                for call in calls:
                    r = await c.post(call, c.headers("tools/call", call["params"]))
                    assert r.status_code < 500
            else:
                r = await c.post(calls, c.headers())
                assert r.status_code == 200 and len(r.json()) == len(calls)
            err = tool_error(await c.call_tool("limited_tool"))
            assert err is not None and err["code"] == JsonRpcErrorCode.RateLimited  # its window held
        windows = limited_app.stack.middleware[0].windows
        assert len(windows) <= 2  # limited_tool's and the one of every other name

    asyncio.run(run())


# -- skills URIs ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def skills_app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("skills")
    for path in ("pdf", "acme/billing"):
        folder = root / path
        folder.mkdir(parents=True)
        name = folder.name
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Does {name}.\n---\n# {name}\n")
        (folder / "ref").mkdir()
        (folder / "ref" / "notes.md").write_text("notes")
    (root / "pdf" / ".env").write_text("TOKEN=secret")
    (root / "pdf" / "env.md").symlink_to(root / "pdf" / ".env")
    return McpApp("skills", "1.0", skills=root, settings=Settings.from_env({}))


segment = st.one_of(st.sampled_from(["pdf", "acme", "billing", "SKILL.md", "ref", "notes.md", ".env", "env.md", "..",
                                     ".", "", "%2e%2e", "%2F"]), st.text(max_size=12))
skill_uri = st.one_of(st.lists(segment, max_size=6).map(lambda parts: "skill://" + "/".join(parts)),
                      long_text.map(lambda t: "skill://" + t), st.text(min_size=4000, max_size=4200, alphabet="ab/"),
                      json_value)


@settings(max_examples=max(FUZZ_EXAMPLES // 10, 50), deadline=None, suppress_health_check=list(HealthCheck))
@given(uri=skill_uri, method=st.sampled_from(["skills/get", "resources/directory/read", "resources/read"]),
       modern=st.booleans())
def test_fuzzed_skill_uris_answer_within_the_documented_quotes(skills_app: Any, uri: Any, method: str,
                                                               modern: bool) -> None:
    async def run() -> None:
        async with McpTestClient(skills_app, era="modern" if modern else "legacy") as c:
            params = c.envelope({"uri": uri})
            r = await c.post({"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                             c.headers(method, params))
            assert r.status_code < 500
            reply = orjson.loads(r.content)
            assert "secret" not in r.text and "/tmp/" not in r.text and "Traceback" not in r.text
            if "error" in reply:
                err = reply["error"]
                assert len(err["message"]) <= 100 + 60, err["message"][:200]
                data = err.get("data") or {}
                assert "uri" not in data or (data["uri"] == uri and len(uri) <= 4096)
            elif method == "skills/get":
                assert reply["result"]["skill"]["uri"] == uri

    asyncio.run(run())

async def test_depth_limit() -> None:
    async with McpTestClient(example_app(max_json_depth=16), initialize=False) as c:
        deep: Any = 1
        for _ in range(40):
            deep = [deep]
        r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": deep}})
        assert r.status_code == 400 and "nested deeper" in r.json()["error"]["message"]
        r = await c.post(b"[" * 5000 + b"]" * 5000)
        assert r.status_code == 400


@pytest.mark.serial
async def test_abandoned_sessions_never_lock_new_clients_out() -> None:
    app = example_app(max_sessions=20_000)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "x", "version": "1"}}}
    async with McpTestClient(app, initialize=False) as c:
        h = c.headers()
        for _ in range(20_000):
            r = await c.post(init, h)
            assert r.status_code == 200
        assert await app.sessions.count() == 20_000
        start = time.monotonic()
        async with McpTestClient(app) as fresh:
            assert await fresh.list_tools()
        assert time.monotonic() - start < 1.0
        assert await app.sessions.count() == 20_000


@pytest.mark.slow
@pytest.mark.serial
async def test_sigterm_under_load_drains_within_five_seconds() -> None:
    with run_server(env={"MCP_LOG_LEVEL": "warning"}) as url:
        proc = PROCESSES[url]
        results: list[Any] = []
        stop = asyncio.Event()

        async def worker(c: McpTestClient) -> None:
            while not stop.is_set():
                try:
                    params = c.envelope({"name": "search", "arguments": {"query": "red"}})
                    r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                                     c.headers("tools/call", params))
                    results.append(r.status_code)
                except httpx.HTTPError as exc:  # a connection refused after the listener closed
                    results.append(type(exc).__name__)
                    return

        async with McpTestClient(url=url, era="modern") as c, McpTestClient(url=url) as legacy:
            resp, _events = await legacy.open_stream()  # a GET stream must not hold the shutdown
            tasks = [asyncio.create_task(worker(c)) for _ in range(8)]
            await asyncio.sleep(1.0)
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(proc.wait, 10)
            elapsed = time.monotonic() - sent
            stop.set()
            await asyncio.gather(*tasks)
            await resp.aclose()
        assert elapsed < 5, elapsed
        statuses = [r for r in results if isinstance(r, int)]
        assert statuses and all(s == 200 for s in statuses), set(results)
        assert "RemoteProtocolError" not in results and "ReadError" not in results
        assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after a clean shutdown


async def test_after_end_keep_alive_every_response_closes_its_connection() -> None:
    app = example_app()
    async with McpTestClient(app, era="modern") as c:
        before = await c.http.get(c.url.replace("/mcp", "/healthz"))
        assert "connection" not in before.headers
        app.end_keep_alive()
        params = c.envelope({"name": "search", "arguments": {"query": "red"}})
        r = await c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                         c.headers("tools/call", params))
        assert r.status_code == 200 and r.headers["connection"] == "close"
        assert (await c.http.get(c.url.replace("/mcp", "/healthz"))).headers["connection"] == "close"


HEAD_CAP, HEADERS_CAP = 4096, 20
token = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=40)
field_value = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=3000)


@pytest.fixture(scope="module")
def small_heads_port() -> Iterator[int]:
    env = {"MCP_HTTP_MAX_HEADER_BYTES": str(HEAD_CAP), "MCP_HTTP_MAX_HEADERS": str(HEADERS_CAP),
           "MCP_LOG_LEVEL": "warning"}
    with run_server(env=env) as url:
        yield httpx.URL(url).port or 0


@pytest.mark.slow
@settings(max_examples=max(FUZZ_EXAMPLES // 20, 20), deadline=None, suppress_health_check=list(HealthCheck))
@given(fields=st.lists(st.tuples(token, field_value), max_size=3 * HEADERS_CAP // 2),
       query=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789=&", max_size=3000),
       piece=st.integers(min_value=1, max_value=2 * HEAD_CAP))
def test_fuzzed_request_heads_are_capped_by_the_server(small_heads_port: int, fields: list[tuple[str, str]],
                                                       query: str, piece: int) -> None:
    raw = (f"GET /healthz?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           + "".join(f"x-{name}: {value}\r\n" for name, value in fields) + "\r\n").encode()
    with socket.create_connection(("127.0.0.1", small_heads_port), timeout=10) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):  # the server may refuse before the head is all sent
            for i in range(0, len(raw), piece):
                s.sendall(raw[i:i + piece])
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while b"\r\n\r\n" not in answer and (chunk := s.recv(65536)):
                answer += chunk
    status = int(answer[9:12])
    # The cap counts the bytes as sent; "GET ", " HTTP/1.1" and the CRLFs that end the request
    # line and the head (17 bytes) may or may not be counted, depending on how reads split.
    if len(fields) + 1 > HEADERS_CAP or len(raw) > HEAD_CAP + 17:
        assert status == 431, (len(fields), len(raw), answer[:100])
        assert b"connection: close" in answer
    elif len(raw) <= HEAD_CAP:
        assert status == 200, (len(fields), len(raw), answer[:100])
    else:
        assert status in (200, 431)
