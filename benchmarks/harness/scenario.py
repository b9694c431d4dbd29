"""What a scenario is (``Scenario``), what running one is given (``Ctx``), and what a family
of scenarios provides to the run and the report (``Family``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .machine import Tools
from .redis_server import RedisDeployment
from .sampling import LoadSettings


@dataclass
class Scenario:
    """One measured case: the request, the servers it runs on and their settings."""

    id: str
    title: str
    measures: str
    kind: str  # the Family that runs it: "load" | "ab" | "sessions" | "instructions" | "tasks" | "tm"
    wire: str = "modern"  # "modern" (2026-07-28, sessionless) | "legacy" (2025-11-25 session)
    method: str = "tools/call"
    params: dict[str, Any] = field(default_factory=dict)
    expect: str = "echo"  # what the verifier checks: echo | echo_sse | tools | doc
    servers: list[str] = field(default_factory=list)
    skip: dict[str, str] = field(default_factory=dict)
    env: dict[str, dict[str, str]] = field(default_factory=dict)
    log_level: str | None = None  # logging/setLevel on the session before the load
    redis: str | None = None  # the scenario's own Redis: "standalone" | "cluster" (None: no Redis)
    baseline_from: str | None = None  # take the bare endpoints' figures from this scenario
    # Another scenario whose mcpcore run is measured again here, interleaved round by round with
    # this one's (its row is "mcpcore (<that id>)"): the ratio between the two then compares runs
    # a few seconds apart, not scenarios minutes apart on a machine whose speed drifts.
    alongside: str | None = None
    variants: dict[str, dict[str, str]] = field(default_factory=dict)  # "ab": label -> extra env
    capabilities: dict[str, Any] = field(default_factory=dict)  # 2026-07-28 clientCapabilities
    # Servers that cannot run this scenario's wire at all: asked once and reported "not available"
    # with their answer (server key -> why), never measured on another wire instead.
    unable: dict[str, str] = field(default_factory=dict)


@dataclass
class Ctx:
    """Everything a scenario's run uses: tools, interpreters, settings, a scratch directory."""

    tools: Tools
    python: dict[str, Path]
    load: LoadSettings
    workdir: Path
    sessions: int
    settle: float = 0.5  # seconds of quiet before reading RSS (doubled after opening the sessions)
    redis: RedisDeployment | None = None  # the scenario's Redis while it runs
    repeat: int = 5  # measured runs per server of a load scenario
    session_repeat: int = 3  # runs per server of a sessions scenario
    smoke: bool = False  # the CI-sized run (instruction counts over fewer requests)
    hash_seeds: tuple[int, ...] = (1, 2, 3)  # PYTHONHASHSEED of the instruction counts (median reported)


RunFn = Callable[[Ctx, Scenario, list[str]], dict[str, Any]]
LinesFn = Callable[[Scenario, dict[str, Any]], list[str]]


def no_lines(sc: Scenario, servers: dict[str, Any]) -> list[str]:
    """A family that adds nothing after the ratio table."""
    return []


@dataclass(frozen=True)
class Family:
    """One kind of scenario: how it is run and how it shows in results.md."""

    kind: str
    run: RunFn  # the selected servers measured: server key (or variant label) -> result
    table: LinesFn  # the scenario's table
    notes: LinesFn = no_lines  # lines after the ratio table
