"""Official ``mcp`` 2.3 SDK, low-level ``Server`` (runs in benchmarks/.venv-peers).

The SDK's fastest documented way to serve tools: constructor handlers
``async (ctx, params) -> Result`` with no argument validation and no output-schema work
(the handler reads ``params.arguments`` itself). Same HTTP configuration switches as
``sdk_echo`` (``stateless_http=True, json_response=True`` unless the scenario needs otherwise).
This variant does less work than mcpcore's ``@tool`` (no schema validation); it is reported as
an extra peer so the SDK's best case is on the table.
"""

from __future__ import annotations

import warnings
from typing import Any

import mcp_types as types
from _peer_env import JSON_RESPONSE, STATELESS
from mcp.server.lowlevel import Server

warnings.simplefilter("ignore")  # send_log_message is deprecated (SEP-2577), still delivered on 2025 sessions

DOC = "mcpcore benchmark document: a short text resource."
_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
           "additionalProperties": False}
TOOLS = [types.Tool(name="echo", description="Return the text unchanged.", input_schema=_SCHEMA),
         types.Tool(name="echo_logged", description="Log three lines to the client, then return the text.",
                    input_schema=_SCHEMA)]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = str((params.arguments or {}).get("text", ""))
    if params.name == "echo_logged":
        for line in ("echo: start", "echo: working", "echo: done"):
            await ctx.session.send_log_message("info", line, logger="tool:echo_logged",
                                               related_request_id=ctx.request_id)
    elif params.name != "echo":
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"Unknown tool {params.name}")],
                                    is_error=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[types.Resource(uri="bench://doc", name="doc", mime_type="text/plain")])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri), mime_type="text/plain",
                                                                         text=DOC)])


server = Server("bench", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                on_list_resources=list_resources, on_read_resource=read_resource)

app = server.streamable_http_app(streamable_http_path="/mcp", json_response=JSON_RESPONSE, stateless_http=STATELESS)
