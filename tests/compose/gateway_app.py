"""The gateway the proxy's scale and client tests run: a parent that mounts one child in process
and proxies the backends named in ``PROXY_BACKENDS`` (``namespace=url`` pairs, comma-separated;
``PROXY_BACKEND_ERA``: the era toward them; ``PROXY_CALLER_AUDIENCE``: each caller's own token goes to
them, ``CallerToken`` of that audience)."""

from __future__ import annotations

import os

from mcpcore import McpApp, tool
from mcpcore.compose import proxy
from mcpcore.credentials import CallerToken


@tool
def local_echo(text: str) -> str:
    """Echo the text (a tool of the mounted child)."""
    return text


child = McpApp("local", "1.0.0", tools=[local_echo])
app = McpApp("gateway", "1.0.0", mounts={"local": child})
for pair in filter(None, os.environ.get("PROXY_BACKENDS", "").split(",")):
    namespace, _, url = pair.partition("=")
    audience = os.environ.get("PROXY_CALLER_AUDIENCE")
    app.mount(proxy(url, era=os.environ.get("PROXY_BACKEND_ERA", "auto"),
                    credentials=CallerToken(audience) if audience else None), namespace=namespace)
