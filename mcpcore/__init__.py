"""mcpcore: production MCP servers in Python.

Decorators in plain service code, one rich ``Context`` per call, both protocol eras on one
endpoint, and stores that can live in Redis.
"""

from ._version import __version__
from .app import McpApp
from .auth import check_scopes
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
from .context.builders import input_required
from .context.inputs import ElicitView, InputRequired, InputRequiredSpec, MissingView, RootsView, SamplingView
from .definitions import CacheHint, TaskSupport, prompt, resource, tool
from .errors import ConfigurationError, ErrorContract, JsonRpcErrorCode, McpError

__all__ = [
    "AudioContent",
    "AuthInfo",
    "BlobResourceContents",
    "CacheHint",
    "ConfigurationError",
    "Context",
    "ElicitView",
    "EmbeddedResource",
    "ErrorContract",
    "ImageContent",
    "InputRequired",
    "InputRequiredSpec",
    "JsonRpcErrorCode",
    "McpApp",
    "McpError",
    "MissingView",
    "PromptMessage",
    "RequestContext",
    "Resource",
    "ResourceLink",
    "RootsView",
    "SamplingView",
    "SessionMode",
    "Settings",
    "TaskSupport",
    "TextContent",
    "TextResourceContents",
    "ToolResult",
    "__version__",
    "check_scopes",
    "create_request_context",
    "input_required",
    "prompt",
    "resource",
    "tool",
    "with_extra",
]
