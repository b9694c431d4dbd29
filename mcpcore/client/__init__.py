"""An MCP client for both protocol eras, over streamable HTTP (a URL, or an app in process) and
stdio (a server run as a subprocess). See docs/client.md."""

from ..errors import McpError
from .asgi import StreamingASGITransport
from .client import TASKS_EXTENSION, Client, task_of
from .listen import Subscription
from .loopback import LoopbackRedirect
from .oauth import OAuth, OAuthError
from .session import Handler
from .sse import header_value, parse_sse
from .tokens import FileTokenStore, MemoryTokenStore, TokenStore

__all__ = ["TASKS_EXTENSION", "Client", "FileTokenStore", "Handler", "LoopbackRedirect", "McpError",
           "MemoryTokenStore", "OAuth", "OAuthError", "StreamingASGITransport", "Subscription", "TokenStore",
           "header_value", "parse_sse", "task_of"]
