"""mcpcore: production MCP servers in Python.

Decorators in plain service code, one rich ``Context`` per call, both protocol eras on one
endpoint, and stores that can live in Redis.
"""

from ._version import __version__
from .app import McpApp
from .config import SessionMode, Settings
from .content import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    Resource,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolResult,
)
from .context import AuthInfo, Context, RequestContext, create_request_context, with_extra
from .definitions import CacheHint, prompt, resource, tool
from .errors import ConfigurationError, ErrorContract, JsonRpcErrorCode, McpError

__all__ = [
    "AudioContent",
    "AuthInfo",
    "BlobResourceContents",
    "CacheHint",
    "ConfigurationError",
    "Context",
    "EmbeddedResource",
    "ErrorContract",
    "ImageContent",
    "JsonRpcErrorCode",
    "McpApp",
    "McpError",
    "PromptMessage",
    "RequestContext",
    "Resource",
    "ResourceLink",
    "SessionMode",
    "Settings",
    "TextContent",
    "TextResourceContents",
    "ToolResult",
    "__version__",
    "create_request_context",
    "prompt",
    "resource",
    "tool",
    "with_extra",
]
