"""pytest fixtures for mcpcore apps (registered automatically through the ``pytest11`` entry point).

- ``mock_ctx``: a fresh :func:`~mcpcore.testing.create_mock_context`.
- ``mcp_client``: an in-process 2025-era :class:`~mcpcore.testing.McpTestClient` for the app your
  project's ``mcp_app`` fixture returns; ``mcp_modern_client`` is the 2026-07-28 one.

Async fixtures run under anyio: mark your tests ``@pytest.mark.anyio``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from .client import McpTestClient
from .mock import create_mock_context


@pytest.fixture
def mock_ctx() -> Any:
    """A ``Context`` with real state rules, recording what the handler sends."""
    return create_mock_context()


@pytest.fixture
async def mcp_client(mcp_app: Any) -> AsyncIterator[McpTestClient]:
    """A 2025-era session with ``mcp_app`` (define that fixture in your conftest)."""
    async with McpTestClient(mcp_app) as client:
        yield client
    await mcp_app.shutdown()


@pytest.fixture
async def mcp_modern_client(mcp_app: Any) -> AsyncIterator[McpTestClient]:
    """A 2026-07-28 client of ``mcp_app``."""
    async with McpTestClient(mcp_app, era="modern") as client:
        yield client
    await mcp_app.shutdown()
