"""Zero disagreement with the kubelet simulator when NRT is exact.

Random small nodes (1-4 NUMA zones, NUMA distances, reserved CPUs, unhealthy GPUs, devices
without NUMA affinity, 2Mi hugepages, CPU and Memory Manager on or off and
``prefer-closest-numa-nodes`` - the plugin then gets the matching arguments) and random
pods (one or two app containers, sometimes an init container or a native sidecar, integer
or fractional CPU, GPUs, hugepages, sometimes Burstable). Pods are admitted one after
another into ``fakenrt.kubelet``'s NodeState; before each, the NRT the node would publish
is rendered from the simulator's state (``fakenrt.nrt.render_nrt``) and the plugin's
verdict on it must equal the simulator's topology verdict. NRT cannot carry Memory
Manager groups; the test adds the simulator's memory blocks to the ledger, as the observed
memory-groups annotation does in a cluster. Pods the simulator refuses for whole-node
reasons (``OutOf...``), and pods needing more devices without NUMA affinity than the node
has left, are not compared: the scheduler loop's whole-node check refuses those before the
plugin runs. Under single-numa-node (every step one zone) the placement the reservation
would charge must also equal what the simulator took, zone by zone.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from exporter.placement import annotation_values, derive_placement
from exporter.resources import ContainerResources, DeviceAssignment, PodResources
from exporter.resources import MemoryBlock as ResourcesMemoryBlock
from fakenrt.kubelet.allocation import (
    INIT,
    TOPOLOGY_AFFINITY_ERROR,
    UNEXPECTED_ADMISSION_ERROR,
)
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt import render_nrt
from fakenrt.podspec import PodSpec, effective_requests, pod_from_manifest
from fakenrt.profiles.parsing import parse_profiles
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.scheduler.plugin import NumaPlugin
from fakenrt.scheduler.reconstruction import NodePod, reconstruct

GPU = "nvidia.com/gpu"
NIC = "example.com/nic"
TOPOLOGY_REASONS = (TOPOLOGY_AFFINITY_ERROR, UNEXPECTED_ADMISSION_ERROR)


@st.composite
def profiles(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 4))
    zones = []
    first = 0
    for i in range(n):
        cpus = draw(st.integers(2, 6))
        gpus = draw(st.integers(0, 3))
        zone: dict[str, Any] = {
            "id": i,
            "cpus": f"{first}-{first + cpus - 1}",
            "memory": f"{draw(st.integers(2, 8))}Gi",
        }
        if gpus:
            zone["devices"] = {GPU: {"count": gpus, "unhealthy": draw(st.integers(0, 1))}}
        if draw(st.booleans()):
            zone["hugepages-2Mi"] = f"{draw(st.integers(0, 4))}Gi"
        zones.append(zone)
        first += cpus
    if n > 1 and draw(st.booleans()):
        far = {(i, j): draw(st.sampled_from([11, 20, 21, 30])) for i in range(n) for j in range(i)}
        for i, zone in enumerate(zones):
            zone["distances"] = [10 if i == j else far[(max(i, j), min(i, j))] for j in range(n)]
    reserved = draw(st.sets(st.integers(0, first - 1), max_size=2))
    kubelet: dict[str, Any] = {
        "topologyManagerPolicy": draw(st.sampled_from(["restricted", "single-numa-node"])),
        "topologyManagerScope": draw(st.sampled_from(["container", "pod"])),
        "cpuManagerPolicy": draw(st.sampled_from(["static", "static", "none"])),
        "memoryManagerPolicy": draw(st.sampled_from(["Static", "Static", "None"])),
    }
    if draw(st.booleans()):
        kubelet["topologyManagerPolicyOptions"] = {"prefer-closest-numa-nodes": "true"}
    if reserved:
        kubelet["reservedSystemCPUs"] = ",".join(str(c) for c in sorted(reserved))
    node: dict[str, Any] = {"name": "sim", "kubelet": kubelet, "zones": zones}
    if draw(st.booleans()):
        node["devices"] = {NIC: draw(st.integers(1, 2))}  # no NUMA affinity: never aligned
    return {"nodes": [node]}


@st.composite
def containers(draw: st.DrawFn, name: str) -> dict[str, Any]:
    limits: dict[str, str] = {
        "cpu": draw(st.sampled_from(["1", "2", "3", "4", "6", "500m", "1500m"])),
        "memory": f"{draw(st.integers(1, 6))}Gi",
    }
    gpus = draw(st.integers(0, 3))
    if gpus:
        limits[GPU] = str(gpus)
    if draw(st.integers(0, 3)) == 0:
        limits[NIC] = "1"
    hugepages = draw(st.integers(0, 2))
    if hugepages:
        limits["hugepages-2Mi"] = f"{hugepages}Gi"
    return {"name": name, "resources": {"limits": limits}}


@st.composite
def pods(draw: st.DrawFn, index: int) -> PodSpec:
    apps = [draw(containers(f"app{i}")) for i in range(draw(st.integers(1, 2)))]
    spec: dict[str, Any] = {"containers": apps}
    kind = draw(st.sampled_from(["none", "none", "init", "sidecar"]))
    if kind != "none":
        init = draw(containers("pre"))
        if kind == "sidecar":
            init["restartPolicy"] = "Always"
        spec["initContainers"] = [init]
    burstable = draw(st.booleans()) and draw(st.booleans())
    if burstable:
        apps[0]["resources"]["requests"] = {"cpu": "100m", "memory": "512Mi"}
    manifest = {
        "kind": "Pod",
        "metadata": {"name": f"p{index}", "namespace": "default", "uid": f"uid-{index}"},
        "spec": spec,
    }
    return pod_from_manifest(manifest)


def unaligned_devices_fit(state: NodeState, admitted: dict[str, PodSpec], pod: PodSpec) -> bool:
    """The loop's whole-node check for devices without NUMA affinity (the plugin never
    looks at them): node allocatable minus the effective requests of the pods on it."""
    used: dict[str, Decimal] = {}
    for other in state.allocations():
        for name, value in effective_requests(admitted[other]).items():
            used[name] = used.get(name, Decimal(0)) + value
    free = {name: len(d.healthy) for name, d in state.profile.devices.items()}
    return all(
        value <= free[name] - used.get(name, Decimal(0))
        for name, value in effective_requests(pod).items()
        if name in free
    )


def exact_ledger(state: NodeState) -> ZoneLedger:
    profile = state.profile
    topology = read_nrt(render_nrt(profile, usage=state.zone_usage()), source="rendered")
    ledger = ZoneLedger.from_nrt(topology)
    for allocation in state.allocations().values():
        for c in allocation.containers:
            for block in c.memory:
                for zone in block.numa:
                    ledger.blocks[zone].append(frozenset(block.numa))
    return ledger


def plugin_for(state: NodeState) -> NumaPlugin:
    """NRT does not say whether the CPU / Memory Manager aligns, nor the Topology Manager's
    options; an operator who knows lists the resources they do not align in
    ``ignoreList`` and sets ``preferClosestNUMANodes``."""
    kubelet = state.profile.kubelet
    ignore: set[str] = set()
    if kubelet.cpu_manager_policy != "static":
        ignore.add("cpu")
    if kubelet.memory_manager_policy != "Static":
        ignore.update({"memory", "hugepages-2Mi"})
    return NumaPlugin(
        PluginArgs(
            ignore_list=frozenset(ignore),
            prefer_closest_numa_nodes=kubelet.prefer_closest_numa_nodes,
        )
    )


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(raw=profiles(), data=st.data())
def test_plugin_verdict_equals_the_kubelet_simulator_on_exact_nrt(
    raw: dict[str, Any], data: st.DataObject
) -> None:
    (profile,) = parse_profiles(raw, source="hypothesis")
    state = NodeState.from_profile(profile)
    admitted: dict[str, PodSpec] = {}
    compared = 0
    for i in range(data.draw(st.integers(1, 4))):
        pod = data.draw(pods(i))
        if not unaligned_devices_fit(state, admitted, pod):
            continue
        ledger = exact_ledger(state)
        verdict = plugin_for(state).filter(pod, ledger.topology, ledger)
        result = state.copy().admit(pod)
        if not result.admit and result.reason not in TOPOLOGY_REASONS:
            continue
        assert verdict.fit is result.admit, (
            f"plugin fit={verdict.fit} ({verdict.reason}) but kubelet "
            f"admit={result.admit} ({result.reason}: {result.message}) for {pod} "
            f"on {profile} with pods {list(state.allocations())}"
        )
        compared += 1
        if result.admit:
            before = state.zone_usage()
            state.admit(pod)
            admitted[pod.key] = pod
            if profile.kubelet.topology_manager_policy == "single-numa-node" and not (
                pod.init_containers
            ):
                # One zone per step: the reservation charges exactly what the kubelet took.
                assert verdict.placement.amounts == usage_delta(before, state.zone_usage())
    assume(compared > 0)


def usage_delta(
    before: dict[int, dict[str, int]], after: dict[int, dict[str, int]]
) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for zone, amounts in after.items():
        changed = {k: v - before[zone].get(k, 0) for k, v in amounts.items()}
        changed = {k: v for k, v in changed.items() if v}
        if changed:
            out[zone] = changed
    return out


def observed_pods(state: NodeState, admitted: dict[str, PodSpec]) -> list[NodePod]:
    """The node's pods as a cluster would show them: each with the observed annotations
    the exporter derives from the podresources report of the simulator's allocation
    (which, like the kubelet's, lists app containers and native sidecars only)."""
    profile = state.profile
    cpu_to_numa = {cpu: zone.id for zone in profile.zones for cpu in zone.cpus}
    device_numa = {
        (name, device): zone.id
        for zone in profile.zones
        for name, dset in zone.devices.items()
        for device in dset.ids
    }
    out = []
    for allocation in state.allocations().values():
        containers = tuple(
            ContainerResources(
                name=c.name,
                cpu_ids=tuple(sorted(c.cpus)),
                devices=tuple(
                    DeviceAssignment(
                        name, (d,), (device_numa[(name, d)],) if (name, d) in device_numa else ()
                    )
                    for name, ids in sorted(c.devices.items())
                    for d in ids
                ),
                memory=tuple(
                    ResourcesMemoryBlock(b.type, b.size, tuple(sorted(b.numa))) for b in c.memory
                ),
            )
            for c in allocation.containers
            if c.kind != INIT
        )
        report = PodResources(allocation.namespace, allocation.name, containers)
        values = annotation_values(derive_placement(report, cpu_to_numa))
        annotations = {k: v for k, v in values.items() if v is not None}
        spec = replace(admitted[allocation.key], annotations=annotations)
        out.append(NodePod(spec=spec, phase="Running"))
    return out


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(raw=profiles(), data=st.data())
def test_reconstruction_from_observed_annotations_gives_the_kubelet_verdict(
    raw: dict[str, Any], data: st.DataObject
) -> None:
    """Appendix A end to end: allocatable minus the placements the exporter observes is as
    good as exact NRT. Pods with regular init containers are left out: podresources does
    not list those containers, so what they keep (CPUs no app container reused) is not
    observable."""
    (profile,) = parse_profiles(raw, source="hypothesis")
    state = NodeState.from_profile(profile)
    admitted: dict[str, PodSpec] = {}
    compared = 0
    for i in range(data.draw(st.integers(1, 4))):
        pod = data.draw(pods(i))
        if any(not c.restartable for c in pod.init_containers):
            continue
        if not unaligned_devices_fit(state, admitted, pod):
            continue
        topology = read_nrt(render_nrt(profile, usage=None), source="rendered")
        rebuilt = reconstruct(topology, observed_pods(state, admitted))
        verdict = plugin_for(state).filter(pod, topology, rebuilt.ledger)
        result = state.copy().admit(pod)
        if not result.admit and result.reason not in TOPOLOGY_REASONS:
            continue
        assert verdict.fit is result.admit, (
            f"plugin fit={verdict.fit} ({verdict.reason}) but kubelet "
            f"admit={result.admit} ({result.reason}: {result.message}) for {pod} "
            f"on {profile} with pods {list(state.allocations())}"
        )
        compared += 1
        if result.admit:
            state.admit(pod)
            admitted[pod.key] = pod
    assume(compared > 0)
