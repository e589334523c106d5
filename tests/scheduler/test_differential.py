"""The differential test: the scheduler plugin against the kubelet simulator, on random
nodes x random pod sequences x every Topology Manager policy and scope.

A random node (1-4 NUMA zones, distances, reserved CPUs, unhealthy GPUs, devices without
NUMA affinity, hugepages, CPU / Memory Manager on or off, ``prefer-closest-numa-nodes``,
and capacity held by foreign pods - the profile's ``allocated``) admits random pods one by
one in ``fakenrt.kubelet.NodeState`` (init containers, native sidecars, fractional CPUs,
Burstable pods, memory that is not a whole number of bytes). Before each pod the plugin -
with default arguments: no ``ignoreList``, the NRT's ``cpuManagerPolicy`` /
``memoryManagerPolicy`` attributes say what is aligned - judges it from what a cluster
shows it:

* the NRT, rendered **exact** (the simulator's current state, ``fakenrt.nrt.loaded``) or
  **stale** (an earlier state of the same node);
* the pods on the node, each with the exporter's observed annotations, or (under
  single-numa-node, where the reservation is exact) the scheduler's predicted one, or with
  none at all (a foreign pod and no exporter);
* reconstruction on (the default) and off.

What must hold, each a failing example when it does not:

* exact NRT, reconstruction on or off: the plugin's verdict is the simulator's;
* stale NRT, reconstruction on: never a false admit (pods at unknown zones - without an
  annotation, or keeping resources in a regular init container - defer the node's
  NUMA-sensitive pods), and the simulator's verdict whenever every pod holding exclusive
  resources is annotated;
* stale NRT, reconstruction off: the simulator's verdict *on the stale state* (the plugin
  is exact about what NRT says; the difference is the staleness reconstruction removes).

Not compared (the scheduler loop's whole-node check refuses these before the plugin runs):
pods the simulator refuses for whole-node reasons (``OutOf...``). Also not compared, being
unknowable from a cluster: a Memory Manager group (a block over several NUMA nodes) held
by a pod no observed annotation reports, or by a regular init container (podresources
does not list those containers) - NRT does not publish groups - and CPUs, devices or
memory a regular init container keeps without an app container reusing them, which are
compared only on exact NRT.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.allocation import INIT, TOPOLOGY_AFFINITY_ERROR, UNEXPECTED_ADMISSION_ERROR
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt.loaded import (
    foreign_pods,
    holds_exclusive,
    node_allocations,
    observed_annotations,
    render_loaded,
)
from fakenrt.podspec import PodSpec, effective_requests, pod_from_manifest
from fakenrt.profiles.parsing import parse_profiles
from fakenrt.profiles.resources import node_allocatable
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.scheduler.plugin import FilterResult, NumaPlugin
from fakenrt.scheduler.reconstruction import NodePod, reconstruct
from fakenrt.scheduler.restricted import RestrictedEvaluator

GPU = "nvidia.com/gpu"
NIC = "example.com/nic"
COMPARED = (TOPOLOGY_AFFINITY_ERROR, UNEXPECTED_ADMISSION_ERROR)
POLICIES = ["none", "best-effort", "restricted", "single-numa-node"]


@st.composite
def profiles(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 4))
    zones = []
    first = 0
    for i in range(n):
        cpus = draw(st.integers(2, 6))
        gpus = draw(st.integers(0, 3))
        unhealthy = draw(st.integers(0, 1)) if gpus else 0
        memory = draw(st.integers(2, 8))
        zone: dict[str, Any] = {
            "id": i,
            "cpus": f"{first}-{first + cpus - 1}",
            "memory": f"{memory}Gi",
        }
        if gpus:
            zone["devices"] = {GPU: {"count": gpus, "unhealthy": unhealthy}}
        if draw(st.booleans()):
            zone["hugepages-2Mi"] = f"{draw(st.integers(0, 4))}Gi"
        if draw(st.integers(0, 2)) == 0:  # foreign pods hold some of the zone
            allocated: dict[str, Any] = {"cpu": draw(st.integers(0, cpus - 2))}
            allocated["memory"] = f"{draw(st.integers(0, memory - 1))}Gi"
            if gpus - unhealthy > 0:
                allocated[GPU] = draw(st.integers(0, gpus - unhealthy))
            zone["allocated"] = allocated
        zones.append(zone)
        first += cpus
    kubelet: dict[str, Any] = {
        "topologyManagerPolicy": draw(st.sampled_from(POLICIES)),
        "topologyManagerScope": draw(st.sampled_from(["container", "pod"])),
        "cpuManagerPolicy": draw(st.sampled_from(["static", "static", "none"])),
        "memoryManagerPolicy": draw(st.sampled_from(["Static", "Static", "None"])),
    }
    for zone in zones:
        # A foreign pod holds exclusive CPUs / memory only where a manager hands them out.
        held = zone.get("allocated", {})
        if kubelet["cpuManagerPolicy"] != "static":
            held.pop("cpu", None)
        if kubelet["memoryManagerPolicy"] != "Static":
            held.pop("memory", None)
    if n > 1 and draw(st.booleans()):
        far = {(i, j): draw(st.sampled_from([11, 20, 21, 30])) for i in range(n) for j in range(i)}
        for i, zone in enumerate(zones):
            zone["distances"] = [10 if i == j else far[(max(i, j), min(i, j))] for j in range(n)]
    reserved = draw(st.sets(st.integers(0, first - 1), max_size=2))
    if reserved:
        kubelet["reservedSystemCPUs"] = ",".join(str(c) for c in sorted(reserved))
    if draw(st.booleans()):
        kubelet["topologyManagerPolicyOptions"] = {"prefer-closest-numa-nodes": "true"}
    node: dict[str, Any] = {"name": "sim", "kubelet": kubelet, "zones": zones}
    if draw(st.booleans()):
        node["devices"] = {NIC: draw(st.integers(1, 2))}  # no NUMA affinity: never aligned
    return {"nodes": [node]}


@st.composite
def containers(draw: st.DrawFn, name: str) -> dict[str, Any]:
    limits: dict[str, str] = {
        "cpu": draw(st.sampled_from(["1", "2", "3", "4", "6", "500m", "1500m"])),
        "memory": draw(st.sampled_from(["1Gi", "2Gi", "3Gi", "4Gi", "6Gi", "1.1Gi"])),
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
    if draw(st.integers(0, 3)) == 0:
        apps[0]["resources"]["requests"] = {"cpu": "100m", "memory": "512Mi"}
    manifest = {
        "kind": "Pod",
        "metadata": {"name": f"p{index}", "namespace": "default", "uid": f"uid-{index}"},
        "spec": spec,
    }
    return pod_from_manifest(manifest)


@dataclass
class OnNode:
    """An admitted pod as the scheduler sees it."""

    spec: PodSpec
    #: "observed", "predicted" or "none"
    source: str

    def node_pod(self) -> NodePod:
        return NodePod(spec=self.spec, phase="Running")


def whole_node_fits(state: NodeState, on_node: list[OnNode], pod: PodSpec) -> bool:
    """The scheduler loop's whole-node check (``cycle.py``): node allocatable minus the
    effective requests of every pod on the node (the foreign pods included, as the
    controller makes them visible), and the pod count."""
    profile = state.profile
    allocatable = {k: Decimal(v) for k, v in node_allocatable(profile).items()}
    used: dict[str, Decimal] = {}
    for other in on_node:
        for name, amount in effective_requests(other.spec).items():
            used[name] = used.get(name, Decimal(0)) + amount
    if len(on_node) + 1 > allocatable.get("pods", Decimal(profile.max_pods)):
        return False
    return all(
        amount <= allocatable.get(name, Decimal(0)) - used.get(name, Decimal(0))
        for name, amount in effective_requests(pod).items()
    )


def plugin_for(state: NodeState, *, reconstruct_available: bool) -> NumaPlugin:
    """Default arguments; only ``prefer-closest-numa-nodes``, which NRT does not publish."""
    return NumaPlugin(
        PluginArgs(
            reconstruct_available=reconstruct_available,
            prefer_closest_numa_nodes=state.profile.kubelet.prefer_closest_numa_nodes,
        )
    )


def judge(
    nrt: dict[str, Any], on_node: list[OnNode], pod: PodSpec, state: NodeState, *, rebuild: bool
) -> FilterResult | None:
    """The plugin's verdict; None when it is not modelled: on a best-effort node with no
    preferred merged hint, which non-preferred hint the kubelet picks (and so whether the
    Memory Manager can allocate inside it) is not predicted (seed 000 leaves the
    BestNonPreferredAffinityCount machinery out)."""
    topology = read_nrt(nrt, source="rendered")
    plugin = plugin_for(state, reconstruct_available=rebuild)
    if rebuild:
        ledger = reconstruct(topology, [p.node_pod() for p in on_node]).ledger
    else:
        ledger = ZoneLedger.from_nrt(topology)
    verdict = plugin.filter(pod, topology, ledger)
    if topology.policy == "best-effort" and verdict.fit and not ledger.unaccounted:
        units = plugin.units(pod, topology)
        aligned = RestrictedEvaluator(prefer_closest=plugin.args.prefer_closest_numa_nodes)
        if not aligned.evaluate(ledger, units).fit:
            return None
    return verdict


def hidden_groups(state: NodeState, on_node: list[OnNode], *, trusted: set[str]) -> bool:
    """Some pod holds a multi-NUMA memory block that no observed annotation reports: any
    such block of a pod not observed, and one of a regular init container of an observed
    pod (podresources does not list those containers)."""
    for key, allocation in state.allocations().items():
        if any(
            len(b.numa) > 1
            for c in allocation.containers
            if key not in trusted or c.kind == INIT
            for b in c.memory
        ):
            return True
    return False


def memory_kept_by_init(state: NodeState, observed: set[str] | None = None) -> bool:
    """Some pod (of ``observed``, when given) keeps memory in a regular init container that
    no later container reused: podresources does not show it, so the observed annotations
    undercount its zones."""
    return any(
        b.size > 0
        for key, allocation in state.allocations().items()
        if observed is None or key in observed
        for c in allocation.containers
        if c.kind == INIT
        for b in c.memory
    )


def kept_by_init(state: NodeState) -> bool:
    """Some pod keeps CPUs, devices or memory in a regular init container that no app
    container reuses: podresources does not show them."""
    if memory_kept_by_init(state):
        return True
    for allocation in state.allocations().values():
        shown_cpus = {cpu for c in allocation.containers if c.kind != INIT for cpu in c.cpus}
        shown = {
            (n, d)
            for c in allocation.containers
            if c.kind != INIT
            for n, ids in c.devices.items()
            for d in ids
        }
        for c in allocation.containers:
            if c.kind == INIT and (
                c.cpus - shown_cpus or {(n, d) for n, ids in c.devices.items() for d in ids} - shown
            ):
                return True
    return False


def disagreement(mode: str, verdict: FilterResult, result: Any, pod: PodSpec, ctx: str) -> str:
    return (
        f"{mode}: plugin fit={verdict.fit} ({verdict.reason}) but kubelet admit={result.admit} "
        f"({result.reason}: {result.message}) for {pod} on {ctx}"
    )


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(raw=profiles(), data=st.data())
def test_plugin_and_kubelet_simulator_agree(raw: dict[str, Any], data: st.DataObject) -> None:
    try:
        (profile,) = parse_profiles(raw, source="hypothesis")
        state = NodeState.from_profile(profile)
    except ValueError:
        assume(False)  # foreign amounts the zone cannot hold (e.g. reserved CPUs)
        raise
    # The profile's foreign `allocated`, as pods on the node (the controller creates them),
    # reported by the exporter or not.
    on_node: list[OnNode] = []
    for spec, allocation in foreign_pods(state):
        source = data.draw(st.sampled_from(["observed", "none"]))
        notes = observed_annotations(profile, allocation) if source == "observed" else {}
        on_node.append(OnNode(replace(spec, annotations=notes), source))
    holders = {a.key: a for a in node_allocations(state)}
    history: list[tuple[NodeState, list[OnNode]]] = [(state.copy(), list(on_node))]
    compared = 0
    single = profile.kubelet.topology_manager_policy == "single-numa-node"
    for i in range(data.draw(st.integers(1, 5))):
        pod = data.draw(pods(i))
        if not whole_node_fits(state, on_node, pod):
            continue
        result = state.copy().admit(pod)
        if not result.admit and result.reason not in COMPARED:
            continue
        ctx = f"{raw} with pods {[(p.spec.key, p.source, holders[p.spec.key]) for p in on_node]}"
        observed = {p.spec.key for p in on_node if p.source == "observed"}
        exact = render_loaded(state)
        # exact NRT, reconstruction off and on
        for rebuild in (False, True):
            trusted = observed if rebuild else set()
            if hidden_groups(state, on_node, trusted=trusted):
                continue
            verdict = judge(exact, on_node, pod, state, rebuild=rebuild)
            if verdict is None:
                continue
            assert verdict.fit is result.admit, disagreement(
                f"exact NRT, reconstruct={rebuild}", verdict, result, pod, ctx
            )
            compared += 1
        # stale NRT: an earlier state of the node
        old_state, old_on_node = history[data.draw(st.integers(0, len(history) - 1))]
        stale = render_loaded(old_state)
        verdict = judge(stale, on_node, pod, state, rebuild=True)
        if (
            verdict is not None
            and not hidden_groups(state, on_node, trusted=observed)
            and not memory_kept_by_init(state, observed)
        ):
            assert not (verdict.fit and not result.admit), disagreement(
                "stale NRT, reconstruct=True (false admit)", verdict, result, pod, ctx
            )
            annotated = all(
                p.source != "none" or not holds_exclusive(holders[p.spec.key]) for p in on_node
            )
            if annotated and not kept_by_init(state):
                assert verdict.fit is result.admit, disagreement(
                    "stale NRT, reconstruct=True, every pod annotated", verdict, result, pod, ctx
                )
        old_result = old_state.copy().admit(pod)
        if (
            whole_node_fits(old_state, old_on_node, pod)
            and (old_result.admit or old_result.reason in COMPARED)
            and not hidden_groups(old_state, old_on_node, trusted=set())
        ):
            verdict = judge(stale, on_node, pod, old_state, rebuild=False)
            assert verdict is None or verdict.fit is old_result.admit, disagreement(
                "stale NRT, reconstruct=False, against the stale state",
                verdict,
                old_result,
                pod,
                ctx,
            )
        compared += 1
        if not result.admit:
            continue
        admitted = state.admit(pod)
        assert admitted.allocation is not None
        source = data.draw(st.sampled_from(["observed", "observed", "none", "predicted"]))
        annotations: dict[str, str] = {}
        if source == "observed":
            annotations = observed_annotations(profile, admitted.allocation)
        elif source == "predicted":
            if not single or pod.init_containers:
                source = "none"  # a prediction is exact only under single-numa-node
            else:
                exact_verdict = judge(exact, on_node, pod, state, rebuild=False)
                assert exact_verdict is not None
                annotations = exact_verdict.placement.annotations()
        on_node.append(OnNode(replace(pod, annotations=annotations), source))
        holders[pod.key] = admitted.allocation
        history.append((state.copy(), list(on_node)))
    assume(compared > 0)
