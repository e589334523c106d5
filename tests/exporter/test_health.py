"""Readiness and liveness decisions."""

from __future__ import annotations

from exporter.daemon import liveness_window_s
from exporter.health import Health


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ready_only_when_both_reached_within_the_window() -> None:
    health = Health(clock=FakeClock(), window=3)
    assert health.readiness() == (False, "no reconcile pass yet")
    health.record_pass(podresources_ok=True, api_ok=True)
    assert health.readiness()[0]
    for _ in range(2):
        health.record_pass(podresources_ok=False, api_ok=True)
    assert health.readiness()[0]  # reached 3 passes ago: still within the window
    health.record_pass(podresources_ok=False, api_ok=True)
    ok, reason = health.readiness()
    assert not ok
    assert reason == "not reached in the last 3 passes: kubelet podresources"
    health.record_pass(podresources_ok=True, api_ok=False)
    assert health.readiness()[0]


def test_liveness_is_the_heartbeat_not_the_pass() -> None:
    """A pass that lasts many windows keeps the exporter alive as long as it beats; only
    a window without a beat fails the probe, and the next beat heals it."""
    clock = FakeClock()
    health = Health(clock=clock, stall_after_s=60)
    assert health.liveness() == (True, "ok")  # start-up counts as a beat
    for _ in range(10):  # ten minutes in one pass, a pod written every 50 s
        clock.now += 50
        assert health.liveness()[0]
        health.beat()
    clock.now += 60
    assert health.liveness()[0]  # the limit itself is still alive
    clock.now += 1
    assert health.liveness() == (
        False,
        "the reconcile loop made no progress for 61s (limit 60s)",
    )
    health.beat()
    assert health.liveness()[0]


def test_a_pass_ending_is_a_beat_and_readiness_ignores_beats() -> None:
    clock = FakeClock()
    health = Health(clock=clock, stall_after_s=60)
    clock.now += 61
    assert not health.liveness()[0]
    health.record_pass(podresources_ok=False, api_ok=False)
    assert health.liveness()[0]
    health.beat()
    assert not health.readiness()[0]


def test_the_default_window_outlasts_every_quiet_step() -> None:
    """Longer than the steps a working loop takes without a beat: a poll interval, a
    podresources call (its deadline), one API request with its retries (4 x 15 s)."""
    assert liveness_window_s(1.0, 10.0) == 120.0
    assert liveness_window_s(30.0, 10.0) == 340.0
    assert liveness_window_s(1.0, 60.0) == 250.0
