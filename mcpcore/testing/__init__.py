"""Testing helpers: an in-process streaming transport and MCP client, mock contexts."""

from .asgi import StreamingASGITransport
from .client import McpTestClient, parse_sse
from .contract import run_tool_contract, tool_error
from .mock import create_mock_context, expect_input_required, get_content_blocks, get_enrichment

__all__ = ["McpTestClient", "StreamingASGITransport", "create_mock_context", "expect_input_required",
           "get_content_blocks", "get_enrichment", "parse_sse", "run_tool_contract", "tool_error"]
