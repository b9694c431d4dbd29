"""The era habits of the clients in the field, played against a real server over HTTP (uvicorn on
a loopback port) and over stdio (a child process): each gets the right era, or a spec-correct
error that names what to fix (issue 28; the wire digest's Part C2).

- discover, then initialize (Copilot CLI), the initialize carrying leftover envelope keys;
- a ``server/discover`` probe first (rmcp on stdio), then staying modern;
- a fallback to ``initialize`` after any error of the probe (go-sdk);
- old and future versions, in ``initialize`` (Cursor asks for 2025-06-18) and per request;
- bridges that drop, re-case or add ``Mcp-Method`` / ``Mcp-Name`` (HTTP only: stdio has no headers);
- a 2025 session's id on 2026-07-28 requests (clients and bridges keep sending it).
"""

from __future__ import annotations

import asyncio
import sys
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest

from .servers import ROOT, run_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
CI = "io.modelcontextprotocol/clientInfo"
MODERN = "2026-07-28"
EVERY_VERSION = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
TOOL = "test_simple_text"


def envelope(version: str = MODERN, **extra: Any) -> dict[str, Any]:
    return {PV: version, CC: {}, CI: {"name": "habits", "version": "1"}, **extra}


@dataclass
class Reply:
    """One answer: the HTTP status (``None`` on stdio) and the JSON-RPC message."""

    status: int | None
    msg: dict[str, Any]
    session_id: str | None = None

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.msg, self.msg
        return dict(self.msg["result"])

    @property
    def code(self) -> int:
        assert "error" in self.msg, self.msg
        return int(self.msg["error"]["code"])


class Peer(ABC):
    """A client's end of one transport. ``modern`` sends a 2026-07-28 request (its envelope and, over
    HTTP, the header mirror); ``legacy`` a request of the 2025 session ``initialize`` opened."""

    transport: str
    version: str | None = None  # the 2025 revision initialize negotiated
    session_id: str | None = None
    ids = 0

    def next_id(self) -> int:
        self.ids += 1
        return self.ids

    @abstractmethod
    async def send(self, msg: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        """Send one request; its answer."""

    async def modern(self, method: str, params: dict[str, Any] | None = None, *, version: str = MODERN,
                     meta: Any = None, headers: dict[str, str] | None = None) -> Reply:
        p = dict(params or {})
        p["_meta"] = meta if meta is not None else envelope(version)
        h = {"MCP-Protocol-Version": version, "Mcp-Method": method}
        if method in NAMED:
            h["Mcp-Name"] = str(p.get(NAMED[method]))
        h.update(headers or {})
        return await self.send({"jsonrpc": "2.0", "id": self.next_id(), "method": method, "params": p},
                               {k: v for k, v in h.items() if v})

    async def initialize(self, version: str = "2025-11-25", *, meta: dict[str, Any] | None = None,
                         headers: dict[str, str] | None = None) -> Reply:
        params: dict[str, Any] = {"protocolVersion": version, "capabilities": {},
                                  "clientInfo": {"name": "habits", "version": "1"}}
        if meta is not None:
            params["_meta"] = meta
        r = await self.send({"jsonrpc": "2.0", "id": self.next_id(), "method": "initialize", "params": params},
                            headers or {})
        if "result" in r.msg:
            self.version = r.result["protocolVersion"]
            self.session_id = r.session_id
            await self.notify("notifications/initialized")
        return r

    @abstractmethod
    async def notify(self, method: str) -> None:
        """Send one notification."""

    def session_headers(self) -> dict[str, str]:
        return {}

    async def legacy(self, method: str, params: dict[str, Any] | None = None,
                     headers: dict[str, str] | None = None) -> Reply:
        h = self.session_headers()
        h.update(headers or {})
        return await self.send({"jsonrpc": "2.0", "id": self.next_id(), "method": method, "params": params or {}}, h)


class HttpPeer(Peer):
    transport = "http"

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client = client
        self.url = url

    async def send(self, msg: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
        resp = await self.client.post(self.url, content=orjson.dumps(msg), headers=h)
        if resp.headers.get("content-type", "").startswith("text/event-stream"):
            events = [orjson.loads(line[5:]) for line in resp.text.splitlines() if line.startswith("data:")]
            body = next(e for e in events if e.get("id") == msg.get("id") and "method" not in e)
        else:
            body = resp.json()
        return Reply(resp.status_code, body, resp.headers.get("mcp-session-id"))

    async def notify(self, method: str) -> None:
        resp = await self.client.post(self.url, content=orjson.dumps({"jsonrpc": "2.0", "method": method}),
                                      headers={"Content-Type": "application/json",
                                               "Accept": "application/json, text/event-stream",
                                               **self.session_headers()})
        assert resp.status_code == 202, resp.text

    def session_headers(self) -> dict[str, str]:
        h = {"MCP-Protocol-Version": self.version} if self.version else {}
        if self.session_id:
            h["Mcp-Session-Id"] = self.session_id
        return h

    async def delete_session(self) -> None:
        assert self.session_id is not None
        resp = await self.client.delete(self.url, headers={"Mcp-Session-Id": self.session_id})
        assert resp.status_code in (200, 204), resp.text


class StdioPeer(Peer):
    transport = "stdio"

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def send(self, msg: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(orjson.dumps(msg) + b"\n")
        await self.proc.stdin.drain()
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 15)
            assert line, "the server closed stdout"
            m = orjson.loads(line)
            if m.get("id") == msg["id"] and "method" not in m:
                return Reply(None, m)

    async def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "method": method}) + b"\n")
        await self.proc.stdin.drain()


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with run_server() as url:
        yield url


@pytest.fixture(params=["http", "stdio"])
async def peer(request: pytest.FixtureRequest, server_url: str) -> AsyncIterator[Peer]:
    if request.param == "http":
        async with httpx.AsyncClient(timeout=15) as client:
            yield HttpPeer(client, server_url)
        return
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio",
        cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    try:
        yield StdioPeer(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.fixture
async def http(server_url: str) -> AsyncIterator[HttpPeer]:
    async with httpx.AsyncClient(timeout=15) as client:
        yield HttpPeer(client, server_url)


def assert_modern_error(r: Reply, code: int, status: int = 400) -> None:
    assert r.code == code, r.msg
    if r.status is not None:
        assert r.status == status, (r.status, r.msg)


async def assert_session_serves(peer: Peer) -> None:
    """The 2025 session (over HTTP, the id initialize gave) answers as its era: no resultType."""
    r = await peer.legacy("tools/list")
    assert r.status in (None, 200) and "resultType" not in r.result and "ttlMs" not in r.result
    assert TOOL in [t["name"] for t in r.result["tools"]]
    r = await peer.legacy("tools/call", {"name": TOOL, "arguments": {}})
    assert "resultType" not in r.result and r.result["content"][0]["type"] == "text"


async def assert_modern_serves(peer: Peer, headers: dict[str, str] | None = None) -> None:
    r = await peer.modern("tools/call", {"name": TOOL, "arguments": {}}, headers=headers)
    assert r.status in (None, 200), r.msg
    assert r.result["resultType"] == "complete" and r.result["content"][0]["type"] == "text"
    assert r.session_id is None  # a 2026-07-28 answer never mints or echoes a session


# -- discover, then initialize (Copilot CLI) ---------------------------------------------------------


async def test_discover_then_initialize_with_leftover_envelope(peer: Peer) -> None:
    r = await peer.modern("server/discover")
    assert r.result["supportedVersions"] == EVERY_VERSION and r.session_id is None
    leftover = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "initialize"} if peer.transport == "http" else None
    r = await peer.initialize("2025-11-25", meta=envelope(), headers=leftover)
    assert r.status in (None, 200), r.msg
    assert r.result["protocolVersion"] == "2025-11-25" and r.result["serverInfo"]["name"] == "mcpcore-everything"
    assert (r.session_id is not None) is (peer.transport == "http")
    await assert_session_serves(peer)


async def test_initialize_naming_2026_in_its_params_is_answered_with_the_latest_2025(peer: Peer) -> None:
    r = await peer.initialize(MODERN, meta=envelope())
    assert r.result["protocolVersion"] == "2025-11-25"
    await assert_session_serves(peer)


async def test_initialize_with_only_the_envelope_is_a_removed_2026_method(peer: Peer) -> None:
    # no handshake params: a 2026-07-28 client checking that initialize is gone (the conformance suite)
    r = await peer.modern("initialize")
    assert_modern_error(r, -32601, 404)
    r = await peer.initialize("2025-11-25", meta=envelope())
    assert r.result["protocolVersion"] == "2025-11-25"
    await assert_session_serves(peer)


# -- a discover probe first (rmcp on stdio), then modern ----------------------------------------------


async def test_discover_probe_then_stays_modern(peer: Peer) -> None:
    r = await peer.modern("server/discover")
    assert r.status in (None, 200) and r.result["resultType"] == "complete"
    assert MODERN in r.result["supportedVersions"] and "tools" in r.result["capabilities"]
    await assert_modern_serves(peer)
    r = await peer.modern("tools/list")
    assert r.result["resultType"] == "complete" and "ttlMs" in r.result


async def test_discover_probe_without_client_info(peer: Peer) -> None:
    r = await peer.modern("server/discover", meta={PV: MODERN, CC: {}})
    assert r.result["supportedVersions"] == EVERY_VERSION


# -- any error of the probe, then initialize (go-sdk) -------------------------------------------------


# The probe's envelope, its headers (over HTTP) and the error each transport answers.
PROBE_ERRORS: dict[str, tuple[Any, dict[str, str] | None, dict[str, int]]] = {
    "no capabilities": ({PV: MODERN}, None, {"http": -32602, "stdio": -32602}),
    # no envelope on stdio: a 2025-era request before initialize, whose method that era lacks
    "meta not an object": ("2026-07-28", None, {"http": -32602, "stdio": -32601}),
    "future version": (envelope("2031-01-01"), {"MCP-Protocol-Version": "2031-01-01"},
                       {"http": -32022, "stdio": -32022}),
    "unknown version string": (envelope("latest"), {"MCP-Protocol-Version": "latest"},
                               {"http": -32022, "stdio": -32022}),
}


@pytest.mark.parametrize("case", sorted(PROBE_ERRORS))
async def test_fallback_to_initialize_after_a_probe_error(peer: Peer, case: str) -> None:
    meta, headers, codes = PROBE_ERRORS[case]
    r = await peer.modern("server/discover", meta=meta, headers=headers)
    code = codes[peer.transport]
    assert_modern_error(r, code, 404 if code == -32601 else 400)
    if code == -32022:
        assert r.msg["error"]["data"]["supported"] == EVERY_VERSION
    r = await peer.initialize("2025-11-25")
    assert r.result["protocolVersion"] == "2025-11-25"
    await assert_session_serves(peer)


async def test_fallback_to_initialize_after_a_missing_header_mirror(http: HttpPeer) -> None:
    r = await http.modern("server/discover", headers={"MCP-Protocol-Version": "", "Mcp-Method": ""})
    assert_modern_error(r, -32020)
    assert "MCP-Protocol-Version" in r.msg["error"]["message"]
    r = await http.initialize("2025-06-18")
    assert r.result["protocolVersion"] == "2025-06-18"
    await assert_session_serves(http)


# -- old and future versions --------------------------------------------------------------------------


@pytest.mark.parametrize("asked,answered", [
    ("2025-06-18", "2025-06-18"),  # Cursor
    ("2025-03-26", "2025-03-26"),
    ("2024-11-05", "2024-11-05"),
    ("2027-01-01", "2025-11-25"),
    ("2026-07-28", "2025-11-25"),
])
async def test_initialize_with_old_and_future_versions(peer: Peer, asked: str, answered: str) -> None:
    r = await peer.initialize(asked)
    assert r.result["protocolVersion"] == answered
    await assert_session_serves(peer)


async def test_a_future_version_per_request_names_every_version_then_the_retry_works(peer: Peer) -> None:
    r = await peer.modern("tools/list", version="2027-01-01")
    assert_modern_error(r, -32022)
    data = r.msg["error"]["data"]
    assert data["supported"] == EVERY_VERSION and data["requested"] == "2027-01-01"
    retry = next(v for v in r.msg["error"]["data"]["supported"] if v == MODERN)
    r = await peer.modern("tools/list", version=retry)
    assert r.result["resultType"] == "complete"


async def test_a_2025_version_per_request_tells_the_client_to_initialize(peer: Peer) -> None:
    r = await peer.modern("tools/list", version="2025-06-18")
    assert_modern_error(r, -32022)
    assert "2025-06-18" in r.msg["error"]["data"]["supported"]
    r = await peer.initialize("2025-06-18")
    await assert_session_serves(peer)


# -- bridges: Mcp-Method / Mcp-Name dropped, re-cased, added (HTTP) ---------------------------------


@pytest.mark.parametrize("dropped", ["Mcp-Method", "Mcp-Name"])
async def test_a_bridge_dropping_a_header_gets_an_error_naming_it(http: HttpPeer, dropped: str) -> None:
    r = await http.modern("tools/call", {"name": TOOL, "arguments": {}}, headers={dropped: ""})
    assert_modern_error(r, -32020)
    assert f"missing {dropped} header" in r.msg["error"]["message"]


async def test_a_bridge_re_casing_header_names_is_served(http: HttpPeer) -> None:
    h = {"mcp-protocol-version": MODERN, "MCP-METHOD": "tools/call", "mcp-name": TOOL}
    r = await http.send({"jsonrpc": "2.0", "id": http.next_id(), "method": "tools/call",
                         "params": {"name": TOOL, "arguments": {}, "_meta": envelope()}}, h)
    assert r.status == 200 and r.result["resultType"] == "complete"


@pytest.mark.parametrize("header,value", [("Mcp-Method", "Tools/Call"), ("Mcp-Name", TOOL.upper())])
async def test_a_bridge_re_casing_a_value_gets_a_mismatch(http: HttpPeer, header: str, value: str) -> None:
    r = await http.modern("tools/call", {"name": TOOL, "arguments": {}}, headers={header: value})
    assert_modern_error(r, -32020)
    assert value in r.msg["error"]["message"]


async def test_a_bridge_adding_the_headers_to_2025_traffic_changes_nothing(http: HttpPeer) -> None:
    added = {"Mcp-Method": "initialize"}
    r = await http.initialize("2025-11-25", headers=added)
    assert r.result["protocolVersion"] == "2025-11-25"
    r = await http.legacy("tools/call", {"name": TOOL, "arguments": {}},
                          headers={"Mcp-Method": "tools/call", "Mcp-Name": TOOL})
    assert r.status == 200 and "resultType" not in r.result
    r = await http.legacy("tools/list", headers={"Mcp-Method": "tools/list"})
    assert r.status == 200 and "resultType" not in r.result


# -- a 2025 session's id on 2026-07-28 requests -------------------------------------------------------


async def test_session_and_envelope_interleaved(peer: Peer) -> None:
    r = await peer.initialize("2025-06-18")
    assert r.result["protocolVersion"] == "2025-06-18"
    carry = peer.session_headers()
    carry.pop("MCP-Protocol-Version", None)  # the envelope's own header mirror goes with it
    r = await peer.modern("server/discover", headers=carry)
    assert r.status in (None, 200) and r.result["supportedVersions"] == EVERY_VERSION
    await assert_modern_serves(peer, carry)
    r = await peer.modern("tools/list", headers=carry)
    assert r.result["resultType"] == "complete"
    await assert_session_serves(peer)


async def test_envelope_with_the_id_of_a_deleted_session_is_still_2026(http: HttpPeer) -> None:
    await http.initialize("2025-11-25")
    sid = http.session_id
    assert sid is not None
    await http.delete_session()
    r = await http.legacy("tools/list")
    assert r.status == 404
    await assert_modern_serves(http, {"Mcp-Session-Id": sid})
    r = await http.modern("server/discover", headers={"Mcp-Session-Id": sid})
    assert r.status == 200 and r.result["supportedVersions"] == EVERY_VERSION
    r = await http.modern("tools/list", headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": ""})
    assert_modern_error(r, -32020)  # the envelope's own answer (its header is missing), not 404


async def test_session_header_and_meta_disagreeing_is_a_mismatch(http: HttpPeer) -> None:
    await http.initialize("2025-11-25")
    r = await http.modern("tools/list", headers=http.session_headers())  # MCP-Protocol-Version: 2025-11-25
    assert_modern_error(r, -32020)
    assert "'2025-11-25' does not match body value '2026-07-28'" in r.msg["error"]["message"]
    r = await http.legacy("tools/list", headers={"MCP-Protocol-Version": MODERN})
    assert_modern_error(r, -32602)  # names 2026-07-28 without its envelope
    await assert_session_serves(http)
