"""An MCP client for both protocol eras, over streamable HTTP (a URL, or an app in process) and
stdio (a server run as a subprocess). See docs/client.md."""

from ..errors import McpError
from .asgi import StreamingASGITransport
from .client import TASKS_EXTENSION, Client, task_of
from .listen import Subscription
from .session import Handler
from .sse import header_value, parse_sse

__all__ = ["TASKS_EXTENSION", "Client", "Handler", "McpError", "StreamingASGITransport", "Subscription",
           "header_value", "parse_sse", "task_of"]
