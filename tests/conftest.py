"""Shared fixtures: anyio on asyncio, fresh example apps, in-process clients."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from mcpcore import McpApp, Settings


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def example_app(**settings: Any) -> McpApp:
    """A fresh app serving every definition of examples/everything.py, with settings that
    ignore the machine's environment."""
    import examples.everything as everything

    app = McpApp("mcpcore-everything", "1.0.0", instructions="test", settings=Settings.from_env({}, **settings))
    app.include(sys.modules[everything.__name__])
    return app


@pytest.fixture
def make_app() -> Callable[..., McpApp]:
    return example_app
