"""A real FastAPI app's routes as tools (tests/apps/openapi_fastapi.py), called in process through
the mounted mcpcore server and, the same app, under uvicorn; each FastMCP failure class of issue 32
that a FastAPI app shows has its test here (the spec-level ones are in test_openapi_specs.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import pytest

from mcpcore import Settings
from mcpcore.errors import TOOL_ERROR_META
from mcpcore.testing import McpTestClient
from tests.apps.openapi_fastapi import AUDIENCE, PNG, SECRET, TOOLS, build
from tests.servers import serve

pytestmark = pytest.mark.anyio
URL = "http://shop.local/mcp/"


def token(aud: str = AUDIENCE, sub: str = "ann") -> str:
    return jwt.encode({"sub": sub, "cid": "desktop", "aud": aud, "exp": int(time.time()) + 300}, SECRET)


SETTINGS = {"MCP_AUTH_MODE": "jwt", "MCP_AUTH_SECRET_KEY": SECRET, "MCP_JWT_EXPECTED_AUDIENCE": AUDIENCE}


@pytest.fixture
async def shop() -> AsyncIterator[tuple[Any, Any]]:
    api, mcp, _ = build(Settings.from_env(SETTINGS))
    async with api.router.lifespan_context(api):
        yield api, mcp


def failure(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("isError"), result
    return dict(result["_meta"][TOOL_ERROR_META])


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_routes_are_tools_called_in_process(shop: tuple[Any, Any], era: str) -> None:
    api, _ = shop
    async with McpTestClient(api, url=URL, era=era, headers={"authorization": f"Bearer {token()}"}) as c:
        listed = {t["name"]: t for t in await c.list_tools()}
        assert sorted(listed) == sorted(TOOLS)
        assert listed["get_item"]["description"].startswith("One item")
        assert listed["get_item"]["annotations"]["readOnlyHint"] is True
        assert listed["get_item"]["inputSchema"]["required"] == ["item_id"]
        item = await c.call_tool("get_item", {"item_id": 1, "detail": True})
        assert item["structuredContent"] == {"id": 1, "name": "lamp", "price": 12.5, "tags": ["home"],
                                             "owner": {"name": "ann", "email": None}}
        plain = await c.call_tool("get_item", {"item_id": 1})
        assert plain["structuredContent"]["owner"] is None
        created = await c.call_tool("create_item", {"name": "desk", "price": 99, "tags": ["office"],
                                                    "owner": {"name": "bo"}})
        assert created["structuredContent"]["id"] >= 2 and created["structuredContent"]["owner"]["name"] == "bo"
        listing = await c.call_tool("list_items", {"tag": "office"})
        assert [i["name"] for i in listing["structuredContent"]["result"]] == ["desk"]
        assert (await c.call_tool("login", {"username": "ann", "password": "open sesame"}))["structuredContent"] \
            == {"user": "ann"}
        assert (await c.call_tool("me", {}))["structuredContent"] == {"user": "ann"}


async def test_a_self_referencing_model_in_and_out(shop: tuple[Any, Any]) -> None:
    """fastmcp #1206: a cyclic $ref stays a $defs reference, finite, both ways."""
    api, _ = shop
    async with McpTestClient(api, url=URL, era="modern", headers={"authorization": f"Bearer {token()}"}) as c:
        listed = {t["name"]: t for t in await c.list_tools()}
        put = listed["put_category"]["inputSchema"]
        assert put["properties"]["children"]["items"] == {"$ref": "#/$defs/Category-Input"}
        assert "Category-Input" in put["$defs"]
        tree = {"name": "a", "children": [{"name": "b", "children": [{"name": "c", "children": []}]}]}
        assert (await c.call_tool("put_category", tree))["structuredContent"] == tree
        got = (await c.call_tool("get_category", {"name": "root", "depth": 2}))["structuredContent"]
        assert got["children"][1]["children"][0] == {"name": "root/1/0", "children": []}
        assert listed["get_category"]["outputSchema"]["properties"]["children"]["items"]["$ref"] == \
            "#/$defs/Category-Output"
        bad = failure(await c.call_tool("put_category", {"name": "a", "children": [{"children": []}]}))
        assert bad["data"]["issues"][0]["path"] == "children.0.name"  # the field, in the cyclic part


async def test_validation_errors_name_the_field(shop: tuple[Any, Any]) -> None:
    """fastmcp #1323: which field is wrong, nested ones by their path, before any request leaves."""
    api, _ = shop
    async with McpTestClient(api, url=URL, era="modern", headers={"authorization": f"Bearer {token()}"}) as c:
        bad = failure(await c.call_tool("create_item", {"name": "x", "price": "cheap", "owner": {"email": "e"}}))
        assert bad["code"] == -32602 and bad["data"]["reason"] == "invalid_arguments"
        paths = {i["path"]: i["message"] for i in bad["data"]["issues"]}
        assert paths == {"price": "should be of type number", "owner.name": "Field required"}
        assert bad["message"] == "Invalid arguments: price: should be of type number"
        missing = failure(await c.call_tool("get_item", {}))
        assert missing["data"]["issues"] == [{"path": "item_id", "message": "Field required"}]
        limit = failure(await c.call_tool("list_items", {"limit": 500}))
        assert limit["data"]["issues"][0]["path"] == "limit"
        unknown = failure(await c.call_tool("get_item", {"item_id": 1, "colour": "red"}))
        assert unknown["data"]["issues"] == [{"path": "colour", "message": "not an argument of this tool"}]


async def test_api_errors_are_tool_errors_with_status_body_and_hint(shop: tuple[Any, Any]) -> None:
    api, _ = shop
    async with McpTestClient(api, url=URL, era="legacy", headers={"authorization": f"Bearer {token()}"}) as c:
        missing = failure(await c.call_tool("get_item", {"item_id": 404}))
        assert missing["code"] == -32001 and missing["data"]["status"] == 404
        assert missing["data"]["body"] == {"detail": "no item 404"}
        assert "GET /items/{item_id} answered 404" in missing["message"] and missing["data"]["recovery"]["hint"]
        conflict = await c.call_tool("reserve", {"item_id": 1})
        envelope = failure(conflict)
        assert envelope["data"]["status"] == 409 and envelope["data"]["body"]["detail"]["error"] == "already_reserved"
        assert "already_reserved" in conflict["content"][0]["text"]  # what a model reads
        wrong = failure(await c.call_tool("login", {"username": "ann", "password": "nope"}))
        assert wrong["data"]["status"] == 401 and wrong["code"] == -32006


async def test_the_guarded_route_gets_the_callers_identity_only_by_policy(shop: tuple[Any, Any]) -> None:
    api, _ = shop
    other = token(aud=["https://elsewhere.example", AUDIENCE])
    async with McpTestClient(api, url=URL, era="modern", headers={"authorization": f"Bearer {other}"}) as c:
        assert (await c.call_tool("me", {}))["structuredContent"] == {"user": "ann"}
    from mcpcore.credentials import NoCredentials

    api2, _, _ = build(Settings.from_env(SETTINGS), credentials=NoCredentials())
    async with api2.router.lifespan_context(api2), \
            McpTestClient(api2, url=URL, era="modern", headers={"authorization": f"Bearer {token()}"}) as c:
        refused = failure(await c.call_tool("me", {}))
        assert refused["data"]["status"] == 401  # by default the caller's token does not go along


async def test_output_checks_are_lenient_and_logged(shop: tuple[Any, Any], caplog: pytest.LogCaptureFixture) -> None:
    """fastmcp #2472 / #1271: a real answer with extra fields, a "required" one missing and an enum
    value the description never listed reaches the caller; fastmcp #1070: outputSchema is there."""
    api, _ = shop
    caplog.set_level(logging.WARNING, "mcpcore.openapi")
    async with McpTestClient(api, url=URL, era="legacy", headers={"authorization": f"Bearer {token()}"}) as c:
        listed = {t["name"]: t for t in await c.list_tools()}
        schema = listed["drifting"]["outputSchema"]
        assert set(schema["properties"]) == {"id", "status", "label"} and "required" not in schema
        got = await c.call_tool("drifting", {"item_id": 7})
        assert not got.get("isError")
        assert got["structuredContent"] == {"id": 7, "status": "archived", "color": "red", "nested": {"deep": [1, 2]}}
        assert all("outputSchema" in t for n, t in listed.items() if n not in ("stream_lines", "download"))
    _, _, tools = build(Settings.from_env(SETTINGS))
    assert tools[0].output_schema is not None


async def test_strict_output_names_the_field(caplog: pytest.LogCaptureFixture) -> None:
    from mcpcore import McpApp
    from mcpcore.openapi import openapi_tools
    from tests.apps.openapi_fastapi import miscounting_api

    api = miscounting_api()
    caplog.set_level(logging.WARNING, "mcpcore.openapi")
    lenient = openapi_tools(api.openapi(), app=api, routes=["GET /count"])
    strict = openapi_tools(api.openapi(), app=api, routes=["GET /count"], strict_output=True, prefix="strict_")
    async with McpTestClient(McpApp("c", tools=[*lenient, *strict]), era="modern") as c:
        ok = await c.call_tool(lenient[0].name, {})
        assert ok["structuredContent"] == {"count": "many"}
        assert "count: should be of type integer" in caplog.text
        bad = failure(await c.call_tool(strict[0].name, {}))
        assert bad["data"]["reason"] == "invalid_output"
        assert bad["data"]["issues"] == [{"path": "count", "message": "should be of type integer"}]


def test_owner_is_deprecated_and_include_fastapi_passes_no_app() -> None:
    """``fastapi_tools(owner=...)`` warns (docs/versioning.md) and still stores it; ``include_fastapi``
    gives no owner (nothing reads it), so it warns about nothing and the tools hold no app."""
    import warnings

    from mcpcore import McpApp
    from mcpcore.openapi import fastapi_tools
    from tests.apps.openapi_fastapi import miscounting_api

    api = miscounting_api()
    marker = object()
    with pytest.warns(DeprecationWarning, match=r"owner=.*removed in mcpcore 0\.4\.0") as caught:
        built = fastapi_tools(api, routes=["GET /count"], owner=marker)
    assert built.owner is marker and caught[0].filename == __file__  # stacklevel: the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        included = McpApp("c", settings=Settings.from_env({})).include_fastapi(api, routes=["GET /count"])
    assert included.owner is None and [t.name for t in included] == [t.name for t in built]


async def test_streams_and_downloads_stay_bounded(shop: tuple[Any, Any]) -> None:
    api, _ = shop
    streamed = api.state.streamed
    async with McpTestClient(api, url=URL, era="modern", headers={"authorization": f"Bearer {token()}"}) as c:
        few = await c.call_tool("stream_lines", {"lines": 3})
        assert few["content"][0]["text"].count("\n") == 3 and len(few["content"]) == 1
        before = dict(streamed)
        many = await c.call_tool("stream_lines", {"lines": 1_000_000})  # ~50 MB if read whole
        assert len(many["content"][0]["text"]) <= 50_001
        assert "truncated text" in many["content"][1]["text"] and "not read" in many["content"][1]["text"]
        assert streamed["started"] == before["started"] + 1 and streamed["finished"] == before["finished"]
        small = await c.call_tool("download", {"name": "dot.png"})
        blob = small["content"][0]["resource"]
        assert blob["mimeType"] == "image/png" and len(blob["blob"]) == len(__import__("base64").b64encode(PNG))
        large = await c.call_tool("download", {"name": "big.png", "size": 400})  # ~430 KB
        assert len(large["content"]) == 1 and "too large to embed" in large["content"][0]["text"]


async def test_the_same_tools_against_the_app_under_uvicorn() -> None:
    env = {**SETTINGS}
    with serve("tests.apps.openapi_fastapi:app", env=env, health_path="/items/1") as (base, _):
        headers = {"authorization": f"Bearer {token()}"}
        async with McpTestClient(url=f"{base}/mcp/", era="legacy", headers=headers) as c:
            assert sorted(t["name"] for t in await c.list_tools()) == sorted(TOOLS)
            item = await c.call_tool("get_item", {"item_id": 1})
            assert item["structuredContent"]["name"] == "lamp"
            assert (await c.call_tool("me", {}))["structuredContent"] == {"user": "ann"}
            assert failure(await c.call_tool("get_item", {"item_id": 9}))["data"]["status"] == 404
        async with McpTestClient(url=f"{base}/mcp/", era="modern", headers=headers) as c:
            many = await c.call_tool("stream_lines", {"lines": 200_000})
            assert "truncated text" in many["content"][1]["text"]
            tree = {"name": "a", "children": [{"name": "b", "children": []}]}
            assert (await c.call_tool("put_category", tree))["structuredContent"] == tree
        async with httpx.AsyncClient() as http:  # the API itself still answers as before
            assert (await http.get(f"{base}/items/1")).json()["name"] == "lamp"
