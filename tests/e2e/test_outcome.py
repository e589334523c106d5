"""Reading an outcome: whose rejection an event is, what a scheduler said about a pod, what
a refused pod's status says."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.outcome import (
    admission_failure,
    kubelet_rejections,
    scheduler_messages,
    scheduler_reports,
)
from tests.scorecard.builders import kubelet_rejection, pod, scheduler_event


def _event(**fields: Any) -> dict[str, Any]:
    event = kubelet_rejection("p")
    event.update(fields)
    return event


@pytest.mark.parametrize(
    ("event", "counted"),
    [
        pytest.param(_event(), True, id="kubelet-source"),
        pytest.param(
            _event(source={}, reportingComponent="kubelet", reportingInstance="n1"),
            True,
            id="events-v1-reporting-fields",
        ),
        pytest.param(_event(source={"component": "kai-scheduler"}), False, id="a-scheduler"),
        pytest.param(_event(reason="OutOfcpu"), False, id="another-reason"),
        pytest.param(
            _event(involvedObject={"kind": "PodGroup", "name": "p"}), False, id="not-a-pod"
        ),
    ],
)
def test_only_the_kubelets_topology_rejections_count(event: dict[str, Any], counted: bool) -> None:
    found = kubelet_rejections([event])
    assert bool(found) is counted
    if counted:
        (r,) = found
        assert (r.pod, r.uid, r.node) == ("p", "uid-p", "n1")


def test_what_a_scheduler_said_condition_first_then_its_events_of_its_reasons() -> None:
    waiting = pod("p", node=None, phase="Pending", unschedulable="0/2 nodes: single-numa-node")
    events = [
        scheduler_event("p", "no zone fits", reason="Unschedulable"),
        scheduler_event("p", "bound", reason="Scheduled"),
        scheduler_event("q", "someone else"),
    ]
    reports = scheduler_reports(events, ("Unschedulable",))
    assert scheduler_messages(waiting, reports) == ["0/2 nodes: single-numa-node", "no zone fits"]
    assert scheduler_messages(pod("q", node=None, phase="Pending"), reports) == []


@pytest.mark.parametrize(
    ("phase", "reason", "message", "expected"),
    [
        pytest.param("Failed", "OutOfcpu", "Pod was rejected: no cpu", "OutOfcpu", id="outofcpu"),
        pytest.param("Failed", "TopologyAffinityError", "Pod was rejected: x", None, id="topology"),
        pytest.param("Failed", "Error", "container exited 1", None, id="ran-and-failed"),
        pytest.param("Running", None, "", None, id="running"),
    ],
)
def test_admission_failures_other_than_topology(
    phase: str, reason: str | None, message: str, expected: str | None
) -> None:
    p = pod("p", phase=phase)
    p["status"] = {"phase": phase, "reason": reason, "message": message}
    assert admission_failure(p) == expected
