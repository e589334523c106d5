"""The kubelet admits the pods it sees at once by creation second, ties in no fixed order
(``fakenrt.scheduler.admission_order``): the scheduler's predictions must hold whatever
order it picks.

The property: the scheduler loop binds a burst while the kubelets are down (nothing is
admitted); then each node's kubelet simulator admits what was bound there in one batch,
sorted by creation second with ties in an order hypothesis picks; every pod must be
admitted with exactly the zones the scheduler predicted. Rounds repeat with the admitted
pods started and observed, as the exporter reports them. Without the rule, a burst of two
pods of one second on one node fails it as soon as they land in each other's zones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from exporter.annotations import OBSERVED_PLACEMENT, PREDICTED_PLACEMENT
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt import render_nrt
from fakenrt.nrt.loaded import observed_annotations
from fakenrt.podspec import pod_from_manifest
from fakenrt.profiles.parsing import parse_profiles
from fakenrt.profiles.resources import node_allocatable
from fakenrt.scheduler.admission_order import (
    AdmissionQueues,
    awaits_admission,
    creation_second,
)
from fakenrt.scheduler.backoff import Backoff
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot, PodSnapshot
from fakenrt.scheduler.loop import Scheduler
from fakenrt.scheduler.metrics import SchedulerMetrics
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.scheduler.plugin import NumaPlugin

GPU = "nvidia.com/gpu"
NAME = "numa-reference"
PREDICTED = '[{"zone":"node-0","amount":{"cpu":"2"}}]'


def _second(s: int) -> str:
    return f"2026-11-27T02:00:{s:02d}Z"


def snapshot_pod(
    name: str,
    *,
    node: str = "n",
    phase: str = "Pending",
    started: bool = False,
    created: str = _second(0),
    annotations: Mapping[str, str] | None = None,
) -> PodSnapshot:
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "annotations": {PREDICTED_PLACEMENT: PREDICTED} if annotations is None else annotations,
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "256Mi"}}}],
        },
    }
    return PodSnapshot(
        spec=pod_from_manifest(manifest), phase=phase, started=started, created=created
    )


# ---- the rule, as a table ------------------------------------------------------------


@pytest.mark.parametrize(
    ("created", "second"),
    [
        ("2026-11-27T02:00:07Z", 1795744807.0),
        ("2026-11-27T02:00:07+00:00", 1795744807.0),
        ("", float("inf")),
        ("yesterday", float("inf")),
    ],
)
def test_creation_second(created: str, second: float) -> None:
    assert creation_second(created) == second


@pytest.mark.parametrize(
    ("pod", "awaits"),
    [
        (snapshot_pod("bound"), True),
        (snapshot_pod("unbound", node=""), False),
        (snapshot_pod("running", phase="Running"), False),
        (snapshot_pod("started", started=True), False),
        (snapshot_pod("failed", phase="Failed"), False),
        (
            snapshot_pod(
                "observed", annotations={PREDICTED_PLACEMENT: PREDICTED, OBSERVED_PLACEMENT: "[]"}
            ),
            False,
        ),
        (snapshot_pod("no-zones", annotations={PREDICTED_PLACEMENT: "[]"}), False),
        (snapshot_pod("no-prediction", annotations={}), False),
    ],
    ids=lambda v: v.key if isinstance(v, PodSnapshot) else str(v),
)
def test_which_pods_await_admission(pod: PodSnapshot, awaits: bool) -> None:
    assert awaits_admission(pod) is awaits


@pytest.mark.parametrize(
    ("waiting", "pending", "barred"),
    [
        (_second(5), _second(6), False),  # created later: the kubelet's order is bind order
        (_second(5), _second(5), True),  # the same second: no fixed order
        (_second(6), _second(5), True),  # created earlier: the kubelet admits it first
        ("", _second(5), True),  # unknown counts as the same second
        (_second(5), "", True),
    ],
)
def test_a_node_is_barred_to_pods_of_its_waiting_pods_second_or_earlier(
    waiting: str, pending: str, barred: bool
) -> None:
    queues = AdmissionQueues([snapshot_pod("q", created=waiting)])
    got = queues.barred(snapshot_pod("p", node="", created=pending))
    assert ("n" in got) is barred
    if barred:
        assert got["n"].startswith("admission order: pod ns/q on the node awaits admission")


def test_the_latest_waiting_second_of_a_node_counts() -> None:
    queues = AdmissionQueues(
        [snapshot_pod("q1", created=_second(5)), snapshot_pod("q2", created=_second(7))]
    )
    assert "n" in queues.barred(snapshot_pod("p", node="", created=_second(6)))
    assert queues.barred(snapshot_pod("p", node="", created=_second(8))) == {}
    queues.bound("m", snapshot_pod("r", node="", created=_second(8)))
    assert set(queues.barred(snapshot_pod("p", node="", created=_second(8)))) == {"m"}


# ---- the property, against the kubelet simulator -------------------------------------


def _profiles(nodes: int, policy: str) -> dict[str, Any]:
    def zone(i: int) -> dict[str, Any]:
        cpus = f"{4 * i}-{4 * i + 3}"
        return {"id": i, "cpus": cpus, "memory": "8Gi", "devices": {GPU: {"count": 2}}}

    kubelet = {"topologyManagerPolicy": policy, "cpuManagerPolicy": "static"}
    return {
        "nodes": [
            {"name": f"node-{n}", "kubelet": kubelet, "zones": [zone(0), zone(1)]}
            for n in range(nodes)
        ]
    }


@dataclass
class Burst:
    """The API as the loop sees it while no kubelet runs: binds and annotations land,
    nothing is admitted until :meth:`admit_batches`."""

    nodes: tuple[NodeSnapshot, ...]
    pods: dict[str, PodSnapshot]
    states: dict[str, NodeState]
    admitted: set[str] = field(default_factory=set)

    def snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(nodes=self.nodes, pods=tuple(self.pods.values()))

    def annotate(self, pod: PodSnapshot, annotations: Mapping[str, str]) -> None:
        kept = self.pods[pod.key]
        merged = {**kept.spec.annotations, **annotations}
        self.pods[pod.key] = replace(kept, spec=replace(kept.spec, annotations=merged))

    def bind(self, pod: PodSnapshot, node: str) -> None:
        kept = self.pods[pod.key]
        self.pods[pod.key] = replace(kept, spec=replace(kept.spec, node_name=node))

    def record_unschedulable(self, pod: PodSnapshot, message: str) -> None:
        pass

    def admit_batches(self, data: st.DataObject) -> None:
        """Each kubelet starts: it admits the pods bound to it in one batch, by creation
        second, ties in an order ``data`` picks; each must get the predicted zones."""
        for name, state in self.states.items():
            batch = [
                p
                for p in self.pods.values()
                if p.spec.node_name == name and p.key not in self.admitted
            ]
            seconds = sorted({creation_second(p.created) for p in batch})
            ordered: list[PodSnapshot] = []
            for second in seconds:
                tied = sorted(
                    (p for p in batch if creation_second(p.created) == second), key=lambda p: p.key
                )
                ordered += data.draw(st.permutations(tied), label=f"{name} at {second}")
            for pod in ordered:
                result = state.admit(pod.spec)
                predicted = pod.spec.annotations.get(PREDICTED_PLACEMENT, "[]")
                where = f"pod {pod.key} on {name}, admitted in the order {[p.key for p in ordered]}"
                assert result.allocation is not None, f"{where}: rejected: {result.reason}"
                observed = observed_annotations(state.profile, result.allocation)
                assert observed.get(OBSERVED_PLACEMENT, "[]") == predicted, where
                self.admitted.add(pod.key)
                self.pods[pod.key] = replace(
                    pod,
                    phase="Running",
                    started=True,
                    spec=replace(pod.spec, annotations={**pod.spec.annotations, **observed}),
                )


@st.composite
def bursts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Guaranteed pods (1-3 CPUs, 0-2 GPUs), created over a few seconds, in order."""
    out = []
    second = 0
    for i in range(draw(st.integers(2, 10))):
        second += draw(st.sampled_from([0, 0, 0, 1]))
        out.append(
            {
                "name": f"p{i}",
                "cpu": draw(st.integers(1, 3)),
                "gpus": draw(st.integers(0, 2)),
                "created": _second(second),
            }
        )
    return out


def _pending(spec: dict[str, Any]) -> PodSnapshot:
    limits = {"cpu": str(spec["cpu"]), "memory": "256Mi"}
    if spec["gpus"]:
        limits[GPU] = str(spec["gpus"])
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": spec["name"], "namespace": "ns"},
        "spec": {
            "schedulerName": NAME,
            "containers": [{"name": "c", "resources": {"limits": limits}}],
        },
    }
    return PodSnapshot(
        spec=pod_from_manifest(manifest), scheduler_name=NAME, created=spec["created"]
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(1, 2),
    policy=st.sampled_from(["single-numa-node", "restricted"]),
    burst=bursts(),
    data=st.data(),
)
def test_predictions_hold_whatever_order_the_kubelet_admits_a_batch_in(
    nodes: int, policy: str, burst: list[dict[str, Any]], data: st.DataObject
) -> None:
    profiles = parse_profiles(_profiles(nodes, policy), source="test")
    states = {p.name: NodeState.from_profile(p) for p in profiles}
    snapshots = tuple(
        NodeSnapshot(
            name=p.name,
            allocatable={r: Decimal(v) for r, v in node_allocatable(p).items()},
            nrt=read_nrt(render_nrt(p, usage=None), source="rendered"),
        )
        for p in profiles
    )
    cluster = Burst(snapshots, {p.key: p for p in map(_pending, burst)}, states)
    clock = [1000.0]
    sched = Scheduler(
        cluster=cluster,
        plugin=NumaPlugin(),
        scheduler_name=NAME,
        metrics=SchedulerMetrics(CollectorRegistry()),
        clock=lambda: clock[0],
        backoff=Backoff(initial=1.0, maximum=1.0),
    )
    for _ in range(len(burst)):
        while True:  # the kubelets are down: bind what the loop will
            clock[0] += 10
            if not sched.run_cycle().bound:
                break
        cluster.admit_batches(data)
        if all(p.spec.node_name for p in cluster.pods.values()):
            break
