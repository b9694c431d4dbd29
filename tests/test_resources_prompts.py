"""resources/* and prompts/*, completion."""

from __future__ import annotations

import base64

import pytest

from mcpcore import Context, McpApp, McpError, Settings, prompt, resource
from mcpcore.testing import McpTestClient

from .conftest import example_app

pytestmark = pytest.mark.anyio


async def test_list_resources_and_templates() -> None:
    async with McpTestClient(example_app()) as c:
        res = (await c.request("resources/list"))["resources"]
        uris = [r["uri"] for r in res]
        assert "test://static-text" in uris and "catalog://items/1" in uris
        static = next(r for r in res if r["uri"] == "test://static-text")
        assert static == {"uri": "test://static-text", "name": "static_text", "description": "A static text resource",
                          "mimeType": "text/plain"}
        tpl = (await c.request("resources/templates/list"))["resourceTemplates"]
        assert {"uriTemplate": "test://template/{id}/data", "name": "template_data",
                "description": "Data for one item, by id", "mimeType": "application/json"} in tpl


async def test_read_text_binary_and_template() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.read_resource("test://static-text")
        assert r == {"contents": [{"uri": "test://static-text", "mimeType": "text/plain",
                                   "text": "This is the content of the static text resource."}]}
        r = await c.read_resource("test://static-binary")
        assert base64.b64decode(r["contents"][0]["blob"]).startswith(b"\x89PNG")
        r = await c.read_resource("test://template/123/data")
        assert '"id":"123"' in r["contents"][0]["text"] and r["contents"][0]["mimeType"] == "application/json"
        r = await c.read_resource("catalog://items/2")
        assert r["contents"][0]["text"] == "blue widget"


async def test_resource_not_found_and_failures_are_json_rpc_errors() -> None:
    async with McpTestClient(example_app()) as c:
        with pytest.raises(McpError) as e:
            await c.read_resource("test://missing")
        assert e.value.code == -32002 and e.value.data["uri"] == "test://missing" and "requestId" in e.value.data
        with pytest.raises(McpError) as e:
            await c.read_resource("catalog://items/99")
        assert e.value.code == -32602
        with pytest.raises(McpError) as e:
            await c.read_resource("catalog://items/abc")
        assert e.value.code == -32602


async def test_resource_handler_gets_uri_and_errors_carry_hints() -> None:
    from mcpcore import ErrorContract

    @resource("docs://{+path}", errors=[ErrorContract("gone", -32001, "Gone", "Pick another document from the list.")])
    def doc(path: str, ctx: Context) -> str:
        if path == "gone":
            raise ctx.fail("gone")
        return f"{ctx.uri}|{path}"

    app = McpApp("t", "1", resources=[doc], settings=Settings.from_env({}))
    async with McpTestClient(app) as c:
        r = await c.read_resource("docs://a/b/c.md")
        assert r["contents"][0]["text"] == "docs://a/b/c.md|a/b/c.md"
        with pytest.raises(McpError) as e:
            await c.read_resource("docs://gone")
        assert e.value.code == -32001
        assert e.value.data["recovery"] == {"hint": "Pick another document from the list."}


async def test_prompts_get_and_list() -> None:
    async with McpTestClient(example_app()) as c:
        prompts = {p["name"]: p for p in (await c.request("prompts/list"))["prompts"]}
        assert prompts["test_prompt_with_arguments"]["arguments"] == [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True}]
        r = await c.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        assert r["messages"] == [{"role": "user", "content": {
            "type": "text", "text": "Prompt with arguments: arg1='a', arg2='b'"}}]
        r = await c.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://x"})
        assert r["messages"][0]["content"]["resource"]["uri"] == "test://x"
        with pytest.raises(McpError) as e:
            await c.get_prompt("test_prompt_with_arguments", {"arg1": "a"})
        assert e.value.code == -32602 and "arg2" in e.value.message
        with pytest.raises(McpError) as e:
            await c.get_prompt("nope")
        assert e.value.code == -32602
        with pytest.raises(McpError) as e:
            await c.get_prompt("test_simple_prompt", {"extra": "x"})
        assert e.value.code == -32602


async def test_completion_for_prompts_and_templates() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                                                    "argument": {"name": "arg1", "value": "pa"}})
        assert r == {"completion": {"values": ["paris", "park", "party"], "total": 3, "hasMore": False}}
        r = await c.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                                                    "argument": {"name": "arg2", "value": "x"}})
        assert r["completion"]["values"] == []
        r = await c.request("completion/complete", {"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
                                                    "argument": {"name": "id", "value": "1"}})
        assert r["completion"]["values"] == ["1", "123"]
        with pytest.raises(McpError) as e:
            await c.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "nope"},
                                                    "argument": {"name": "a", "value": ""}})
        assert e.value.code == -32602
        with pytest.raises(McpError) as e:
            await c.request("completion/complete", {"ref": {"type": "bogus"}, "argument": {"name": "a"}})
        assert e.value.code == -32602


async def test_methods_of_unregistered_families_are_not_found() -> None:
    @prompt
    def only() -> str:
        """Doc."""
        return "x"

    app = McpApp("t", "1", prompts=[only], settings=Settings.from_env({}))
    async with McpTestClient(app) as c:
        assert "tools" not in c.init_result["capabilities"]
        with pytest.raises(McpError) as e:
            await c.list_tools()
        assert e.value.code == -32601


async def test_bad_arguments_are_reported_one_way_by_every_family() -> None:
    async with McpTestClient(example_app()) as c:
        tool_err = (await c.call_tool("search", {"query": "red", "limit": 500}))["_meta"]["dev.mcpcore/error"]
        with pytest.raises(McpError) as prompt_err:
            await c.get_prompt("test_prompt_with_arguments", {"arg1": "a"})
        with pytest.raises(McpError) as extra_err:
            await c.get_prompt("test_simple_prompt", {"extra": "x"})
        with pytest.raises(McpError) as resource_err:
            await c.read_resource("catalog://items/abc")
    shapes = [(tool_err["code"], tool_err["data"]), (prompt_err.value.code, prompt_err.value.data),
              (extra_err.value.code, extra_err.value.data), (resource_err.value.code, resource_err.value.data)]
    for code, data in shapes:
        assert code == -32602 and data["reason"] == "invalid_arguments" and data["recovery"]["hint"]
        assert data["issues"] and {"path", "message"} <= set(data["issues"][0]) and data["requestId"]
    assert prompt_err.value.message == "Invalid arguments: arg2: Field required"
    assert extra_err.value.message == "Unknown argument(s): extra."
    assert resource_err.value.data["issues"][0]["path"] == "index"


def test_resource_not_found_has_its_own_name_and_conflict_keeps_its_own() -> None:
    from mcpcore.errors import RESOURCE_NOT_FOUND, JsonRpcErrorCode, resource_not_found

    assert RESOURCE_NOT_FOUND == -32002 and not hasattr(JsonRpcErrorCode, "ResourceNotFound")
    assert JsonRpcErrorCode(-32002) is JsonRpcErrorCode.Conflict
    legacy, modern = resource_not_found("a://b", modern=False), resource_not_found("a://b", modern=True)
    assert (legacy.code, legacy.data) == (-32002, {"uri": "a://b"}) and legacy.message == "Resource not found: a://b"
    assert (modern.code, modern.data) == (-32602, {"uri": "a://b"})


def test_every_error_object_has_one_shape() -> None:
    from mcpcore.errors import ErrorContract, error_object
    from mcpcore.protocol.jsonrpc import bounded_batch

    assert error_object(-32600, "Bad") == {"code": -32600, "message": "Bad"}
    assert error_object(-32600, "Bad", {"a": 1}) == {"code": -32600, "message": "Bad", "data": {"a": 1}}
    err = McpError(-32001, "Gone", {"reason": "gone"})
    hint = ErrorContract("gone", -32001, "Gone", "Pick another document from the list.")
    assert err.to_wire("R-1", [hint]) == {"code": -32001, "message": "Gone", "data": {
        "reason": "gone", "recovery": {"hint": "Pick another document from the list."}, "requestId": "R-1"}}
    assert err.data == {"reason": "gone"} and McpError(-32603, "x").to_wire() == {"code": -32603, "message": "x"}
    [part] = bounded_batch([], [({"id": 1}, b"x" * 100)], 10)
    assert part == b'{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"The batch\'s response would exceed 10 ' \
                   b'bytes; send this request on its own."}}'
