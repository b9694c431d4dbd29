"""mcpcore gateway for the proxy benchmark: the echo server at ``BENCH_BACKEND`` proxied under the
namespace ``be`` (its ``echo`` is ``be_echo``), toward the backend in ``BENCH_BACKEND_ERA``."""

from __future__ import annotations

import os

from mcpcore import McpApp
from mcpcore.compose import proxy

app = McpApp("bench-gateway", "1.0", mounts={"be": proxy(os.environ["BENCH_BACKEND"],
                                                           era=os.environ.get("BENCH_BACKEND_ERA", "auto"))})
