"""Shared fixtures: anyio on asyncio, fresh example apps, in-process clients."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpcore import McpApp, Settings

from .connect import connect  # noqa: F401  (the fixture: one test over 2025 HTTP, 2026 HTTP and stdio)


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


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``REDIS_URL`` when set, else a private ``redis-server`` on a free port (stopped at the end)."""
    env = os.environ.get("REDIS_URL", "").strip()
    if env:
        yield env
        return
    from tests.storage.conftest import redis_server

    with redis_server(tmp_path_factory.mktemp("redis") / "redis.log") as (url, _):
        yield url


def pytest_configure(config: pytest.Config) -> None:
    """Coverage runs in this process (make test sets ``COVERAGE_PROCESS_START``); the servers and
    tools the tests start are not traced, so the variable goes, except in an xdist controller,
    whose workers need it to start their own coverage."""
    distributing = bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")
    if not distributing:
        os.environ.pop("COVERAGE_PROCESS_START", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules with a ``slow`` test first, so that two streams (make test) do not end on one long
    module while the other stream has nothing left; the order within each group is kept."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)
