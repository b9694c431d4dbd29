"""The official SEP-2663 (Tasks) server scenarios of conformance 0.2.0-alpha.12 against the
example server, in full: with the memory stores, and with the Redis stores (a private
redis-server). Behind a round-robin proxy of two instances: tests/scale/test_conformance_proxy.py.

``--requirements`` runs do not score extension scenarios, so each runs on its own and every
check it reports must be ``SUCCESS``. One check is the exception, and only as the suite reports
it: ``tasks-status-notifications`` is a single check the suite marks SKIPPED whatever the server
does (its harness still observes the tools/call stream instead of ``subscriptions/listen``);
tests/tasks/ checks the notifications themselves.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.scale.harness import cluster
from tests.servers import run_server
from tests.tools import ensure_node

pytestmark = pytest.mark.slow

SCENARIOS = ("tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
             "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-status-notifications",
             "tasks-required-task-error", "tasks-mrtr-composition")
# The fewest checks each scenario reports when it runs in full (a scenario that stops early reports fewer).
MIN_CHECKS = {"tasks-lifecycle": 9, "tasks-capability-negotiation": 5, "tasks-wire-fields": 4,
              "tasks-request-state-removal": 3, "tasks-mrtr-input": 4, "tasks-request-headers": 5,
              "tasks-dispatch-and-envelope": 9, "tasks-status-notifications": 1, "tasks-required-task-error": 3,
              "tasks-mrtr-composition": 2}
UNCONDITIONALLY_SKIPPED = {"tasks-status-notifications": "pending subscriptions/listen rewrite"}


def checks(scenario: str, url: str, out: Path) -> list[dict[str, str]]:
    """Run one scenario of the alpha suite against ``url``; its checks (the CLI must pass)."""
    cli = ensure_node.ensure("alpha") / ".bin" / "conformance"
    proc = subprocess.run([str(cli), "server", "--url", url, "--scenario", scenario, "-o", str(out)],
                          env=ensure_node.env(), capture_output=True, text=True, timeout=300)
    files = list(out.glob("**/checks.json"))
    assert files, f"{scenario} wrote no checks.json:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
    found: list[dict[str, str]] = json.loads(files[0].read_text())
    assert proc.returncode == 0, "\n".join(f"{c['id']}: {c['status']} {c.get('errorMessage', '')}" for c in found)
    return found


def all_checks(url: str, folder: Path) -> dict[str, list[dict[str, str]] | AssertionError]:
    """Every scenario against ``url``, four at a time (each is its own client; the suite's Node
    start-up, not the server, is most of a scenario's time): a scenario's checks, or why it
    wrote none."""

    def one(scenario: str) -> list[dict[str, str]] | AssertionError:
        (folder / scenario).mkdir()
        try:
            return checks(scenario, url, folder / scenario)
        except AssertionError as e:
            return e

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(SCENARIOS, pool.map(one, SCENARIOS), strict=True))


def assert_scenario_passes(scenario: str, found: list[dict[str, str]] | AssertionError) -> None:
    """:func:`assert_every_check_passes` on a result of :func:`all_checks`."""
    if isinstance(found, AssertionError):
        raise found
    assert_every_check_passes(scenario, found)


def assert_every_check_passes(scenario: str, found: list[dict[str, str]]) -> None:
    """Every check ``SUCCESS``, but the suite's own unconditional skip."""
    bad = []
    for c in found:
        if c["status"] == "SUCCESS":
            continue
        why = UNCONDITIONALLY_SKIPPED.get(c["id"])
        if c["status"] == "SKIPPED" and why is not None and why in c.get("description", ""):
            continue
        bad.append(f"{c['id']}: {c['status']} {c.get('errorMessage', '')}")
    assert not bad, "\n".join(bad)
    assert len(found) >= MIN_CHECKS[scenario], [c["id"] for c in found]


@pytest.fixture(scope="module", params=["memory", "redis"])
def server_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "memory":
        with run_server() as url:
            yield url
    else:
        with cluster(tmp_path_factory.mktemp("tasks-conf"), n=1) as cl:
            yield cl.urls[0]


@pytest.fixture(scope="module")
def results(server_url: str, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, list[dict[str, str]] | AssertionError]:
    return all_checks(server_url, tmp_path_factory.mktemp("tasks-checks"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_tasks_scenario_every_check_passes(
        scenario: str, results: dict[str, list[dict[str, str]] | AssertionError]) -> None:
    assert_scenario_passes(scenario, results[scenario])
