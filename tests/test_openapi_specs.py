"""OpenAPI documents as tools: published ones (GitHub's REST description and ReadMe's examples,
from npm) built whole and checked by the Inspector CLI's ``tools/list --strict`` portability
check; the requests the tools make, seen by a real ASGI API; the FastMCP failure classes of
issue 32 at the document level (cyclic and external references, outputSchema and a ``$ref`` at
its root, the every-route default, names, clashes, per-operation reports)."""

from __future__ import annotations

import base64
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route as StarletteRoute

from mcpcore import ConfigurationError, McpApp, Settings
from mcpcore.errors import TOOL_ERROR_META
from mcpcore.lint import lint_definitions
from mcpcore.openapi import ALL, READ_ONLY, Route, openapi_tools
from mcpcore.openapi.call import AppTransport
from mcpcore.openapi.select import METHODS
from mcpcore.testing import McpTestClient
from tests.apps.openapi_specs import example_documents, spec
from tests.servers import ROOT, serve
from tests.tools import ensure_node

pytestmark = pytest.mark.anyio


def operation_count(path: Path) -> int:
    doc = json.loads(path.read_text())
    return sum(1 for item in doc.get("paths", {}).values() for m in item if m in METHODS)


def echo_client() -> tuple[httpx.AsyncClient, list[dict[str, Any]]]:
    """A real API that answers every request with what it received."""
    seen: list[dict[str, Any]] = []

    async def echo(request: Request) -> JSONResponse:
        body = await request.body()
        got = {"method": request.method, "path": request.url.path, "query": request.url.query,
               "headers": {k: v for k, v in request.headers.items() if k in ("api_key", "cookie", "content-type",
                                                                            "x-trace", "authorization")},
               "body": body.decode(errors="replace") if body and request.headers.get("content-type", "")
               .startswith(("application/json", "application/x-www-form", "text/")) else
               base64.b64encode(body).decode()}
        seen.append(got)
        return JSONResponse(got)

    api = Starlette(routes=[StarletteRoute("/{rest:path}", echo, methods=[m.upper() for m in METHODS])])
    return httpx.AsyncClient(transport=AppTransport(api), base_url="http://api.local"), seen


def failure(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("isError"), result
    return dict(result["_meta"][TOOL_ERROR_META])


# -- published documents, whole, through the Inspector ----------------------------------------

def inspector_list(target: str, era: str, home: Path) -> tuple[int, dict[str, Any], str]:
    launcher = ensure_node.ensure("inspector") / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / \
        "build" / "index.js"
    env = {**ensure_node.env(), "HOME": str(home), "MCP_CATALOG_PATH": str(home / "catalog.json"),
           "MCP_CLIENT_CONFIG_PATH": str(home / "client.json")}
    with serve(target, startup_timeout=120) as (base, _):  # a whole document is built at start
        proc = subprocess.run([str(ensure_node.node_bin() / "node"), str(launcher), "--cli", f"{base}/mcp", "--format",
                               "json", "-q", "--protocol-era", era, "--method", "tools/list", "--strict"],
                              env=env, capture_output=True, text=True, timeout=300, cwd=home)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def findings(listed: dict[str, Any]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for tool in listed.get("schemaFindings", []):
        for f in tool["findings"]:
            out[(f["severity"], f["rule"])] = out.get((f["severity"], f["rule"]), 0) + 1
    return out


@pytest.mark.slow
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_every_published_example_operation_is_a_portable_tool(era: str, tmp_path: Path) -> None:
    """ReadMe's 3.0 and 3.1 examples (Petstore among them): every operation becomes a tool (or
    is reported), and the Inspector's strict check finds no portability error in any schema; its
    only warnings are schemas the documents leave untyped (``{}``: any value)."""
    documents = example_documents()
    expected = 0
    for path in documents:
        built = openapi_tools(path, client=httpx.AsyncClient(), routes=ALL)
        assert len(built) + len(built.skipped) == operation_count(path), path
        assert all(s.reason and s.pointer.startswith(("#", "/")) for s in built.skipped)
        expected += len(built)
    code, listed, stderr = inspector_list("tests.apps.openapi_specs:examples", era, tmp_path)
    assert code == 0, stderr[-2000:]
    assert len(listed["result"]["tools"]) == expected and expected > 500
    assert set(findings(listed)) <= {("warning", "untyped-schema")}, findings(listed)


@pytest.mark.slow
def test_petstore_has_no_finding_at_all(tmp_path: Path) -> None:
    for name in ("petstore", "petstore31"):
        assert len(openapi_tools(spec(name), client=httpx.AsyncClient(), routes=ALL)) == 20
        code, listed, stderr = inspector_list(f"tests.apps.openapi_specs:{name}", "modern", tmp_path)
        assert code == 0 and "schemaFindings" not in listed, stderr[-2000:]


@pytest.mark.slow
def test_githubs_rest_description_whole(tmp_path: Path) -> None:
    """Every operation of GitHub's REST description (about 1,200) becomes a tool or is reported;
    the time and memory of the build are printed (pytest -s) and bounded loosely."""
    probe = ("import json, resource, time, httpx\n"
             "from mcpcore.openapi import openapi_tools, ALL\n"
             "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
             "t = time.perf_counter()\n"
             f"built = openapi_tools({str(spec('github'))!r}, client=httpx.AsyncClient(), routes=ALL)\n"
             "print(json.dumps({'tools': len(built), 'skipped': [str(s) for s in built.skipped],"
             " 'seconds': time.perf_counter() - t, 'rss_before_mb': before / 1024,"
             " 'rss_after_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,"
             " 'list_bytes': sum(len(json.dumps(d.to_wire())) for d in built)}))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=ROOT)
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\nGitHub REST description: {figures['tools']} tools, {len(figures['skipped'])} skipped, built in "
          f"{figures['seconds']:.2f} s, RSS {figures['rss_before_mb']:.0f} -> {figures['rss_after_mb']:.0f} MB, "
          f"tools/list {figures['list_bytes'] / 1e6:.1f} MB")
    assert figures["tools"] + len(figures["skipped"]) == operation_count(spec("github"))
    assert figures["tools"] > 1000 and figures["seconds"] < 60
    code, listed, stderr = inspector_list("tests.apps.openapi_specs:github", "legacy", tmp_path)
    assert code == 0, stderr[-2000:]
    assert len(listed["result"]["tools"]) == figures["tools"]
    print(f"Inspector --strict findings on GitHub's tools: {findings(listed)}")
    assert set(findings(listed)) <= {("warning", "untyped-schema")}


# -- requests on the wire ----------------------------------------------------------------------

async def test_petstore_requests_reach_the_api_as_the_document_says() -> None:
    client, seen = echo_client()
    tools = openapi_tools(spec("petstore"), client=client,
                          routes=["findPetsByStatus", "getPetById", "deletePet", "updatePetWithForm", "addPet",
                                  "uploadFile", "tag:user"])
    async with McpTestClient(McpApp("pets", tools=tools, settings=Settings.from_env({})), era="modern") as c:
        names = {t["name"] for t in await c.list_tools()}
        assert {"findPetsByStatus", "getPetById", "createUser", "loginUser"} <= names and "placeOrder" not in names
        await c.call_tool("findPetsByStatus", {"status": ["available", "sold"]})
        assert seen[-1]["path"] == "/v2/pet/findByStatus" and seen[-1]["query"] == "status=available&status=sold"
        got = await c.call_tool("getPetById", {"petId": 42})
        assert got["structuredContent"]["path"] == "/v2/pet/42"  # the echo departs from Pet: passed on
        await c.call_tool("deletePet", {"petId": 7, "api_key": "k-1"})
        assert seen[-1]["method"] == "DELETE" and seen[-1]["headers"]["api_key"] == "k-1"
        await c.call_tool("updatePetWithForm", {"petId": 7, "name": "rex", "status": "sold"})
        assert seen[-1]["body"] == "name=rex&status=sold"
        assert seen[-1]["headers"]["content-type"] == "application/x-www-form-urlencoded"
        await c.call_tool("addPet", {"name": "rex", "photoUrls": ["u"], "category": {"id": 1, "name": "dogs"}})
        sent = {"name": "rex", "photoUrls": ["u"], "category": {"id": 1, "name": "dogs"}}
        assert json.loads(seen[-1]["body"]) == sent
        bad = failure(await c.call_tool("addPet", {"name": "rex", "photoUrls": ["u"], "category": {"id": "one"}}))
        assert bad["data"]["issues"] == [{"path": "category.id", "message": "should be of type integer"}]
        png = base64.b64encode(b"\x89PNG").decode()
        await c.call_tool("uploadFile", {"petId": 3, "additionalMetadata": "m", "file": png})
        parts = base64.b64decode(seen[-1]["body"])  # multipart/form-data: a field and a file part
        assert seen[-1]["headers"]["content-type"].startswith("multipart/form-data; boundary=")
        assert b'name="additionalMetadata"\r\n\r\nm\r\n' in parts
        assert b'name="file"; filename="file"' in parts and b"\x89PNG" in parts
        assert len(seen) == 6  # the invalid call sent nothing


async def test_cookies_and_name_clashes() -> None:
    client, seen = echo_client()
    doc = {"openapi": "3.0.3", "info": {"title": "clash", "version": "1"}, "paths": {"/things/{id}": {"put": {
        "operationId": "putThing",
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                       {"name": "id", "in": "query", "schema": {"type": "integer"}},
                       {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                       {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                       {"name": "_private", "in": "query", "schema": {"type": "string"}}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["id"],
            "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}}}},
        "responses": {"204": {"description": "stored"}}}}}}
    [tool] = openapi_tools(doc, client=client, routes=ALL)
    assert list(tool.input_schema["properties"]) == ["id", "id_query", "p_private", "X-Trace", "session", "id_body",
                                                     "name"]
    assert tool.input_schema["required"] == ["id", "id_body"]
    async with McpTestClient(McpApp("c", tools=[tool], settings=Settings.from_env({})), era="legacy") as c:
        done = await c.call_tool("putThing", {"id": "a/b", "id_query": 2, "X-Trace": "t", "session": "s 1",
                                              "p_private": "x", "id_body": 3, "name": "n"})
        assert done["structuredContent"]["method"] == "PUT"
    assert seen[-1]["path"] == "/things/a%2Fb" or seen[-1]["path"] == "/things/a/b"
    assert seen[-1]["query"] == "id=2&_private=x" and seen[-1]["headers"]["x-trace"] == "t"
    assert seen[-1]["headers"]["cookie"] == "session=s%201" and json.loads(seen[-1]["body"]) == {"id": 3, "name": "n"}


# -- the failure classes -------------------------------------------------------------------------

async def test_cyclic_references_become_defs() -> None:
    """fastmcp #1206: circular schemas build, list and validate; the cycle is a $defs reference."""
    client, _ = echo_client()
    tools = openapi_tools(spec("schema-circular"), client=client, routes=ALL)
    assert len(tools) == 3 and not tools.skipped
    cyclic = [t for t in tools if "$defs" in t.input_schema]
    assert cyclic, [t.input_schema for t in tools]
    for t in cyclic:
        text = json.dumps(t.input_schema)
        assert all(f'"#/$defs/{name}"' in text for name in t.input_schema["$defs"])
    circular = openapi_tools(spec("circular"), client=client, routes=ALL)
    assert len(circular) == 1 and "Missing" not in json.dumps(circular[0].to_wire())


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def remote_schemas(tmp_path: Path) -> Iterator[str]:
    """A real HTTP server on loopback serving one schema document."""
    folder = tmp_path / "remote"
    write(folder / "thing.json", {"Thing": {"type": "object", "properties": {"size": {"type": "integer"}}}})

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(5)


async def test_external_references(tmp_path: Path, remote_schemas: str) -> None:
    """fastmcp #2293: references to files beside the spec are read (one outside its folder is
    refused); a remote one only with allow_remote_refs; each refusal names the operation and pointer."""
    write(tmp_path / "api" / "schemas" / "pet.json", {"Pet": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "owner": {"$ref": "../common.json#/Owner"}}}})
    write(tmp_path / "api" / "common.json", {"Owner": {"type": "object", "properties": {"id": {"type": "integer"}}}})
    write(tmp_path / "secret.json", {"Secret": {"type": "string"}})

    def op(oid: str, ref: str) -> dict[str, Any]:
        return {"post": {"operationId": oid, "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": ref}}}}, "responses": {"200": {"description": "ok", "content": {
                "application/json": {"schema": {"$ref": ref}}}}}}}

    main = write(tmp_path / "api" / "openapi.json", {
        "openapi": "3.1.0", "info": {"title": "ext", "version": "1"}, "paths": {
            "/pets": op("addPet", "schemas/pet.json#/Pet"),
            "/secret": op("leak", "../secret.json#/Secret"),
            "/things": op("addThing", f"{remote_schemas}/thing.json#/Thing")}})
    client, _ = echo_client()
    built = openapi_tools(main, client=client, routes=ALL)
    assert [t.name for t in built] == ["addPet"]
    assert built[0].input_schema["properties"]["owner"]["properties"] == {"id": {"type": "integer"}}
    assert built[0].output_schema is not None and built[0].output_schema["type"] == "object"
    reasons = {s.operation: (s.pointer, s.reason) for s in built.skipped}
    assert reasons["POST /secret (leak)"][0] == "#/paths/~1secret/post/requestBody/content/application~1json/schema"
    assert "leaves the spec's folder" in reasons["POST /secret (leak)"][1]
    assert "allow_remote_refs" in reasons["POST /things (addThing)"][1]
    report = lint_definitions(tools=built)
    assert sum(f.rule == "openapi-skipped" for f in report.findings) == 2
    allowed = openapi_tools(main, client=client, routes=["addThing"], allow_remote_refs=True)
    assert allowed[0].input_schema["properties"] == {"size": {"type": "integer"}}
    async with McpTestClient(McpApp("e", tools=[*built], settings=Settings.from_env({})), era="modern") as c:
        bad = failure(await c.call_tool("addPet", {"name": "rex", "owner": {"id": "x"}}))
        assert bad["data"]["issues"][0]["path"] == "owner.id"


def test_output_schema_from_the_2xx_response_with_a_root_ref() -> None:
    """fastmcp #1070 (no outputSchema) and #2455 ($ref at its root): getPetById's 200 is a $ref
    to Pet, advertised as an object; a list answer is wrapped as result; no JSON, no schema."""
    tools = {t.name: t for t in openapi_tools(spec("petstore"), client=httpx.AsyncClient(), routes=ALL)}
    pet = tools["getPetById"].output_schema
    assert pet is not None and pet["type"] == "object" and "$ref" not in pet and "name" in pet["properties"]
    assert "required" not in pet  # lenient: real answers leave "required" fields out
    found = tools["findPetsByStatus"].output_schema
    assert found is not None and found["properties"]["result"]["type"] == "array"
    assert tools["deletePet"].output_schema is None


def test_no_every_route_default_and_the_selectors() -> None:
    client = httpx.AsyncClient()
    with pytest.raises(ConfigurationError, match="no default"):
        openapi_tools(spec("petstore"), client=client)
    with pytest.raises(ConfigurationError, match=r"client= .* or app="):
        openapi_tools(spec("petstore"), routes=ALL)
    with pytest.raises(ConfigurationError, match="no operation matches 'getPetByID'"):
        openapi_tools(spec("petstore"), client=client, routes=["getPetById", "getPetByID"])
    read_only = openapi_tools(spec("petstore"), client=client, routes=READ_ONLY)
    assert {t.meta["dev.mcpcore/openapi"]["method"] for t in read_only} == {"GET"} and len(read_only) == 8
    globbed = openapi_tools(spec("petstore"), client=client, routes=["* /store/*"], exclude=["DELETE /store/*"])
    assert sorted(t.name for t in globbed) == ["getInventory", "getOrderById", "placeOrder"]
    named = openapi_tools(spec("petstore"), client=client, prefix="pets_",
                          routes=[Route("getPetById", name="pet", description="One pet, by its id.")])
    assert [(t.name, t.description) for t in named] == [("pets_pet", "One pet, by its id.")]


def test_names_stay_within_64_characters_and_apart() -> None:
    long_a, long_b = "get" + "VeryLongOperationName" * 4 + "A", "get" + "VeryLongOperationName" * 4 + "B"
    doc = {"openapi": "3.0.0", "info": {"title": "long", "version": "1"}, "paths": {
        "/a": {"get": {"operationId": long_a, "summary": "A", "responses": {"204": {"description": "ok"}}}},
        "/b": {"get": {"operationId": long_b, "summary": "B", "responses": {"204": {"description": "ok"}}}},
        "/c/{x}": {"get": {"parameters": [{"name": "x", "in": "path", "required": True, "schema": {"type": "string"}}],
                           "responses": {"204": {"description": "ok"}}}},
        "/d": {"get": {"operationId": "pets.list", "responses": {"204": {"description": "ok"}}}}}}
    built = openapi_tools(doc, client=httpx.AsyncClient(), routes=ALL, prefix="svc_")
    names = [t.name for t in built]
    assert all(len(n) <= 64 for n in names) and len(set(names)) == 4 and names[3] == "svc_pets_list"
    assert not [f for f in lint_definitions(tools=built).findings if f.rule == "tool-name-portable"]
    assert names[2] == "svc_get__c_x" and names[0].startswith("svc_getVeryLongOperationName")


def test_a_broken_operation_is_reported_and_the_rest_built() -> None:
    doc = {"openapi": "3.0.0", "info": {"title": "mixed", "version": "1"}, "paths": {
        "/ok": {"get": {"operationId": "ok", "responses": {"204": {"description": "ok"}}}},
        "/dangling": {"get": {"operationId": "dangling", "responses": {"200": {"description": "ok", "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/Nope"}}}}}}},
        "/undeclared/{id}": {"get": {"operationId": "undeclared", "responses": {"204": {"description": "ok"}}}},
        "/badparam": {"get": {"operationId": "badparam", "parameters": [{"name": "q", "in": "body"}],
                              "responses": {"204": {"description": "ok"}}}}}}
    built = openapi_tools(doc, client=httpx.AsyncClient(), routes=ALL)
    assert [t.name for t in built] == ["ok"]
    assert [str(s) for s in built.skipped] == [
        "GET /dangling (dangling): #/paths/~1dangling/get/responses/200/content/application~1json/schema: "
        "$ref '#/components/schemas/Nope' names nothing",
        "GET /undeclared/{id} (undeclared): #/paths/~1undeclared~1{id}/get: path parameter {id} is not declared",
        "GET /badparam (badparam): #/paths/~1badparam/get/parameters/0: a parameter needs a name and an 'in' of "
        "path, query, header or cookie"]
    with pytest.raises(ConfigurationError, match="not an OpenAPI 3 document"):
        openapi_tools({"swagger": "2.0", "paths": {}}, client=httpx.AsyncClient(), routes=ALL)


async def test_remote_answers_binary_slow_rate_limited_and_unreachable() -> None:
    """A remote API (client=): a large binary answer is a resource_link to it, a slow one a
    timeout, a 429 retryable with its Retry-After, an unreachable one a retryable error."""
    import asyncio

    from starlette.responses import Response

    async def big(request: Request) -> Response:
        return Response(b"\x00" * 600_000, media_type="application/pdf")

    async def slow(request: Request) -> Response:
        await asyncio.sleep(5)
        return Response(b"{}", media_type="application/json")

    async def busy(request: Request) -> Response:
        return JSONResponse({"message": "slow down"}, status_code=429, headers={"retry-after": "7"})

    api = Starlette(routes=[StarletteRoute("/report.pdf", big), StarletteRoute("/slow", slow),
                            StarletteRoute("/busy", busy)])
    op = {"responses": {"200": {"description": "ok"}}}
    doc = {"openapi": "3.0.3", "info": {"title": "remote", "version": "1"}, "paths": {
        "/report.pdf": {"get": {"operationId": "report", **op}}, "/slow": {"get": {"operationId": "slow", **op}},
        "/busy": {"get": {"operationId": "busy", **op}}}}
    client = httpx.AsyncClient(transport=AppTransport(api), base_url="https://reports.example")
    tools = openapi_tools(doc, client=client, routes=ALL, timeout=0.5)
    gone = openapi_tools(doc, client=httpx.AsyncClient(base_url="http://127.0.0.1:9"), routes=["busy"],
                         prefix="gone_")
    async with McpTestClient(McpApp("r", tools=[*tools, *gone], settings=Settings.from_env({})), era="modern") as c:
        report = await c.call_tool("report", {})
        assert "too large to embed" in report["content"][0]["text"]
        assert report["content"][1] == {"type": "resource_link", "uri": "https://reports.example/report.pdf",
                                        "name": "report.pdf", "mimeType": "application/pdf"}
        slow_call = failure(await c.call_tool("slow", {}))
        assert slow_call["data"]["reason"] == "api_timeout" and slow_call["code"] == -32004
        busy_call = failure(await c.call_tool("busy", {}))
        assert busy_call["data"]["status"] == 429 and busy_call["data"]["retryable"] is True
        assert busy_call["data"]["retryAfterSeconds"] == 7 and "wait 7 s" in busy_call["data"]["recovery"]["hint"]
        unreachable = failure(await c.call_tool("gone_busy", {}))
        assert unreachable["data"]["reason"] == "api_unreachable" and unreachable["data"]["retryable"] is True
