"""The halves agree: the predicted annotations the scheduler writes at bind equal the
observed annotations the exporter derives from the kubelet simulator's allocation of the
same pod - placement and Memory Manager groups, memory included.

Random small nodes and pods (``tests.scheduler.test_agreement``'s generators: 1-4 zones,
hugepages, CPU / Memory Manager on or off, restricted or single-numa-node, container or
pod scope). Pods are admitted one after another into ``fakenrt.kubelet``'s NodeState; the
plugin judges each on exact NRT plus the simulator's memory blocks. For every pod both
admit, the plugin's ``Placement.annotations()`` must equal
:func:`fakenrt.nrt.loaded.observed_annotations` of the simulator's allocation.

Compared where the prediction is exact by design (docs/scheduler.md, "Approximations
kept"): pods without regular init containers (podresources does not list those, so what
they keep is unobservable), and CPUs / devices only when every step of the pod got one
zone (inside a multi-zone mask the kubelet picks concrete CPUs / devices by topology,
which NRT cannot show; the walk fills the mask lowest zone first). Memory is always
compared: a block's bytes are reported for its whole NUMA set, so the groups are exact.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    PREDICTED_MEMORY_GROUPS,
    PREDICTED_PLACEMENT,
)
from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt.loaded import observed_annotations
from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.profiles.model import NodeProfile
from fakenrt.profiles.parsing import parse_profiles
from fakenrt.scheduler.placement import is_memory_type
from tests.scheduler.test_agreement import (
    GPU,
    exact_ledger,
    plugin_for,
    pods,
    profiles,
    unaligned_devices_fit,
)


@st.composite
def group_profiles(draw: st.DrawFn) -> dict[str, Any]:
    """Nodes where multi-NUMA memory is common: 2-4 small zones, 2Mi hugepages on some."""
    zones = []
    first = 0
    for i in range(draw(st.integers(2, 4))):
        cpus = draw(st.integers(2, 4))
        zone: dict[str, Any] = {
            "id": i,
            "cpus": f"{first}-{first + cpus - 1}",
            "memory": f"{draw(st.integers(2, 5))}Gi",
        }
        if draw(st.booleans()):
            zone["devices"] = {GPU: {"count": draw(st.integers(1, 2))}}
        if draw(st.integers(0, 3)) == 0:
            zone["hugepages-2Mi"] = f"{draw(st.integers(1, 3))}Gi"
        zones.append(zone)
        first += cpus
    kubelet = {
        "topologyManagerPolicy": draw(st.sampled_from(["restricted", "single-numa-node"])),
        "topologyManagerScope": draw(st.sampled_from(["container", "pod"])),
        "cpuManagerPolicy": draw(st.sampled_from(["static", "none"])),
        "memoryManagerPolicy": "Static",
    }
    return {"nodes": [{"name": "sim", "kubelet": kubelet, "zones": zones}]}


@st.composite
def group_pods(draw: st.DrawFn, index: int) -> PodSpec:
    """Guaranteed pods asking for up to 10Gi (often more than a zone), CPUs whole or not,
    sometimes GPUs or 2Mi hugepages, sometimes a native sidecar."""

    def one(name: str) -> dict[str, Any]:
        limits = {
            "cpu": draw(st.sampled_from(["500m", "1", "2", "4", "6", "9"])),
            "memory": f"{draw(st.integers(1, 10))}Gi",
        }
        if draw(st.integers(0, 3)) == 0:
            limits[GPU] = str(draw(st.integers(1, 3)))
        if draw(st.integers(0, 3)) == 0:
            limits["hugepages-2Mi"] = f"{draw(st.integers(1, 4))}Gi"
        return {"name": name, "resources": {"limits": limits}}

    spec: dict[str, Any] = {"containers": [one(f"app{i}") for i in range(draw(st.integers(1, 2)))]}
    if draw(st.integers(0, 3)) == 0:
        spec["initContainers"] = [{**one("side"), "restartPolicy": "Always"}]
    return pod_from_manifest(
        {
            "kind": "Pod",
            "metadata": {"name": f"p{index}", "namespace": "default", "uid": f"uid-{index}"},
            "spec": spec,
        }
    )


def _memory_only(placement: str) -> list[dict[str, Any]]:
    out = []
    for entry in json.loads(placement):
        amount = {r: v for r, v in entry["amount"].items() if is_memory_type(r)}
        if amount:
            out.append({"zone": entry["zone"], "amount": amount})
    return out


def _one_zone_steps(allocation: PodAllocation, profile: NodeProfile) -> bool:
    """Every container's CPUs and aligned devices sit in one zone (or it has none)."""
    zone_of_cpu = {cpu: z.id for z in profile.zones for cpu in z.cpus}
    zone_of_device = {
        (name, d): z.id for z in profile.zones for name, ds in z.devices.items() for d in ds.ids
    }
    zones: set[int] = set()
    for c in allocation.containers:
        zones |= {zone_of_cpu[cpu] for cpu in c.cpus}
        zones |= {
            zone_of_device[(name, d)]
            for name, ids in c.devices.items()
            for d in ids
            if (name, d) in zone_of_device
        }
    return len(zones) <= 1


def check_predictions(profile: NodeProfile, sequence: list[PodSpec]) -> tuple[int, int]:
    """Admit ``sequence``; returns how many pods were compared, and how many of those hold
    multi-NUMA memory."""
    state = NodeState.from_profile(profile)
    admitted: dict[str, PodSpec] = {}
    compared = multi = 0
    for pod in sequence:
        if not unaligned_devices_fit(state, admitted, pod):
            continue
        ledger = exact_ledger(state)
        verdict = plugin_for(state).filter(pod, ledger.topology, ledger)
        result = state.admit(pod)
        if result.allocation is None:
            continue
        admitted[pod.key] = pod
        if not verdict.fit or any(not c.restartable for c in pod.init_containers):
            continue
        predicted = verdict.placement.annotations()
        observed = observed_annotations(profile, result.allocation)
        where = f"pod {pod.key} on {profile}: predicted {predicted}, observed {observed}"
        assert predicted[PREDICTED_MEMORY_GROUPS] == observed[OBSERVED_MEMORY_GROUPS], where
        want = observed.get(OBSERVED_PLACEMENT, "[]")
        if _one_zone_steps(result.allocation, profile):
            assert predicted[PREDICTED_PLACEMENT] == want, where
        else:
            assert _memory_only(predicted[PREDICTED_PLACEMENT]) == _memory_only(want), where
        groups = json.loads(observed[OBSERVED_MEMORY_GROUPS])
        multi += any(len(g["memoryNodes"]) > 1 for g in groups)
        compared += 1
    return compared, multi


def _pod(name: str, memory: str, cpu: str = "1") -> PodSpec:
    limits = {"cpu": cpu, "memory": memory}
    return pod_from_manifest(
        {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "app", "resources": {"limits": limits}}]},
        }
    )


TWO_ZONES = {
    "nodes": [
        {
            "name": "sim",
            "kubelet": {"topologyManagerPolicy": "restricted", "memoryManagerPolicy": "Static"},
            "zones": [
                {"id": 0, "cpus": "0-3", "memory": "4Gi"},
                {"id": 1, "cpus": "4-7", "memory": "4Gi"},
            ],
        }
    ]
}


BIG_THEN_SMALL = [_pod("big", "6Gi", cpu="6"), _pod("small", "1Gi", cpu="2")]


def test_a_multi_numa_memory_group_is_predicted_as_observed() -> None:
    """6 CPUs and 6Gi over two 4-CPU 4Gi zones: no per-zone memory in either placement,
    one group of 6Gi over both zones in both memory-groups annotations (the old prediction
    spread 4Gi + 2Gi over the placement's zones); a 1Gi pod after it is refused (group rule)."""
    (profile,) = parse_profiles(TWO_ZONES, source="test")
    assert check_predictions(profile, BIG_THEN_SMALL) == (1, 1)  # small: refused by both
    state = NodeState.from_profile(profile)
    ledger = exact_ledger(state)
    verdict = plugin_for(state).filter(BIG_THEN_SMALL[0], ledger.topology, ledger)
    assert verdict.placement.annotations() == {
        PREDICTED_PLACEMENT: (
            '[{"zone":"node-0","amount":{"cpu":"4"}},{"zone":"node-1","amount":{"cpu":"2"}}]'
        ),
        PREDICTED_MEMORY_GROUPS: (
            '[{"memoryNodes":["node-0","node-1"],"amount":{"memory":"6442450944"}}]'
        ),
    }


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(groups=st.booleans(), data=st.data())
@example(groups=True, data=None).via("a group over both zones")
def test_predicted_annotations_equal_the_observed_ones(
    groups: bool, data: st.DataObject | None
) -> None:
    """Half the examples from ``test_agreement``'s generators (the whole variety: init
    containers, Burstable pods, managers off, devices without NUMA affinity), half from
    generators that make multi-NUMA memory common."""
    if data is None:
        (profile,) = parse_profiles(TWO_ZONES, source="example")
        sequence = BIG_THEN_SMALL
    else:
        raw = data.draw(group_profiles() if groups else profiles(), label="profile")
        (profile,) = parse_profiles(raw, source="hypothesis")
        make = group_pods if groups else pods
        sequence = [data.draw(make(i)) for i in range(data.draw(st.integers(1, 5)))]
    compared, multi = check_predictions(profile, sequence)
    event("multi-NUMA memory compared" if multi else "single-NUMA memory only")
    assume(compared > 0)
