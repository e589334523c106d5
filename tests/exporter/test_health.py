"""Readiness and liveness decisions."""

from __future__ import annotations

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


def test_liveness_fails_when_passes_stop() -> None:
    clock = FakeClock()
    health = Health(clock=clock, stall_after_s=60)
    assert health.liveness()[0]
    clock.now += 61
    assert not health.liveness()[0]
    health.record_pass(podresources_ok=False, api_ok=False)
    assert health.liveness()[0]
