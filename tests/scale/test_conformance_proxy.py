"""The official conformance suites against two Redis-backed instances behind a per-request
round-robin proxy: every scored scenario passes, whichever instance serves each request, and so
does every tasks scenario (a task created on one instance is polled, answered and cancelled on
the other)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.test_conformance import _report, _run
from tests.conformance.test_tasks_conformance import SCENARIOS, all_checks, assert_scenario_passes

from .harness import cluster, proxy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with cluster(tmp_path_factory.mktemp("conf"), n=2) as cl, proxy(cl.urls) as url:
        yield url


@pytest.mark.parametrize("group,args", [
    ("stable", ["--suite", "all"]),
    ("alpha", ["--requirements", "2025-11-25"]),
    ("alpha", ["--requirements", "2026-07-28"]),
])
def test_suites_behind_a_round_robin_proxy(proxied: str, group: str, args: list[str], tmp_path: Path) -> None:
    proc = _run(group, ["--url", proxied, *args], tmp_path)
    assert proc.returncode == 0, _report(proc)


@pytest.fixture(scope="module")
def tasks_results(proxied: str, tmp_path_factory: pytest.TempPathFactory
                  ) -> dict[str, list[dict[str, str]] | AssertionError]:
    return all_checks(proxied, tmp_path_factory.mktemp("tasks-checks"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_tasks_scenarios_behind_a_round_robin_proxy(
        scenario: str, tasks_results: dict[str, list[dict[str, str]] | AssertionError]) -> None:
    assert_scenario_passes(scenario, tasks_results[scenario])
