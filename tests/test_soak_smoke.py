"""The soak benchmark (``make soak``), a few seconds of it: sessions come and go without an error
and the server's RSS is sampled; the verdict rule on synthetic samples."""

from __future__ import annotations

import pytest

from benchmarks.soak import Tally, soak, verdict


@pytest.mark.slow
def test_a_short_soak_runs_clean() -> None:
    tally, env = soak(minutes=0.1, clients=2, every=1.0, idle_ms=2000)
    assert tally.errors == 0 and tally.calls == 3 * tally.sessions > 0
    assert tally.deleted > 0 and tally.abandoned > 0
    assert len(tally.samples) >= 3 and all(mb > 10 for _, mb in tally.samples)
    assert env == {"MCP_STATEFUL_SESSION_STALE_TIMEOUT_MS": "2000"}
    assert verdict(tally) == (None, False)  # shorter than the two minutes it lets the server settle


def test_the_verdict_measures_growth_after_the_first_two_minutes() -> None:
    flat = Tally(samples=[(0, 40.0), (60, 80.0), (120, 100.0), (300, 103.0), (600, 104.0)])
    growth, ok = verdict(flat)
    assert ok and growth == pytest.approx(0.04)
    leaking = Tally(samples=[(0, 40.0), (120, 100.0), (600, 130.0)])
    assert verdict(leaking) == (pytest.approx(0.3), False)
