"""The gateway the proxy's scale and client tests run: a parent that mounts one child in process
and proxies the backends named in ``PROXY_BACKENDS`` (``namespace=url`` pairs, comma-separated;
``PROXY_BACKEND_ERA``: the era toward them)."""

from __future__ import annotations

import os

from mcpcore import McpApp, tool
from mcpcore.compose import proxy


@tool
def local_echo(text: str) -> str:
    """Echo the text (a tool of the mounted child)."""
    return text


child = McpApp("local", "1.0.0", tools=[local_echo])
app = McpApp("gateway", "1.0.0", mounts={"local": child})
for pair in filter(None, os.environ.get("PROXY_BACKENDS", "").split(",")):
    namespace, _, url = pair.partition("=")
    app.mount(proxy(url, era=os.environ.get("PROXY_BACKEND_ERA", "auto")), namespace=namespace)
