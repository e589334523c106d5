"""The metrics collector reads the controller's counters at scrape time."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from fakenrt.controller.metrics import ControllerCollector, Snapshot


def test_collector_reports_every_family() -> None:
    registry = CollectorRegistry()
    snap = Snapshot(
        nodes=3,
        admitted=7,
        rejected=2,
        pods={"running": 5, "rejected": 2},
        pending_nrt_changes=4,
        writes={"PatchPodStatus": 9, "PublishNrt:retry": 1, "PatchPodStatus:gone": 1},
        nrt_writes=6,
    )
    registry.register(ControllerCollector(lambda: snap))
    value = registry.get_sample_value
    assert value("fakenrt_controller_nodes") == 3
    assert value("fakenrt_controller_admissions_total", {"result": "rejected"}) == 2
    assert value("fakenrt_controller_pods", {"stage": "running"}) == 5
    assert value("fakenrt_controller_nrt_pending_changes") == 4
    labels = {"effect": "PublishNrt", "result": "retry"}
    assert value("fakenrt_controller_api_writes_total", labels) == 1
    labels = {"effect": "PatchPodStatus", "result": "ok"}
    assert value("fakenrt_controller_api_writes_total", labels) == 9
    assert value("fakenrt_controller_nrt_writes_total") == 6
