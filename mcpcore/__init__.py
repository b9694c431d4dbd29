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
from .context.asks import Elicited, Sampled
from .context.builders import input_required
from .context.inputs import ElicitView, InputRequired, InputRequiredSpec, MissingView, RootsView, SamplingView
from .context.values import Key
from .definitions import CacheHint, TaskSupport, prompt, resource, tool
from .definitions.depends import Depends
from .errors import ConfigurationError, ErrorContract, JsonRpcErrorCode, McpError
from .middleware import Call, CallNext, Middleware

__all__ = [
    "AudioContent",
    "AuthInfo",
    "BlobResourceContents",
    "CacheHint",
    "Call",
    "CallNext",
    "ConfigurationError",
    "Context",
    "Depends",
    "ElicitView",
    "Elicited",
    "EmbeddedResource",
    "ErrorContract",
    "ImageContent",
    "InputRequired",
    "InputRequiredSpec",
    "JsonRpcErrorCode",
    "Key",
    "McpApp",
    "McpError",
    "Middleware",
    "MissingView",
    "PromptMessage",
    "RequestContext",
    "Resource",
    "ResourceLink",
    "RootsView",
    "Sampled",
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
