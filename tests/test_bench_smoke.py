"""The benchmark harness still works end to end (``make bench-smoke``): every server module it
starts in the project's virtualenv answers the echo call, with wrk loads of a second."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.run import smoke


@pytest.mark.slow
@pytest.mark.timeout(480)  # a dozen servers started in turn, two under valgrind, a Redis Cluster: ~60 s when quiet
def test_bench_smoke(tmp_path: Path) -> None:
    assert smoke(tmp_path) == 0
