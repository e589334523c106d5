"""Scenarios i, j, k: GPUs allocated through Dynamic Resource Allocation (issue 20).

The kubelet prepares a pod's ResourceClaims after admission and its Topology Manager
never sees them (docs/kubelet-simulator.md, "ResourceClaims (DRA)"): a DRA GPU lands
where the scheduler's allocator put it, the pod's exclusive CPUs where the CPU Manager
puts them, and under ``single-numa-node`` the two can differ without any error. Only the
scheduler can align them - by choosing the GPU on the NUMA node the kubelet will pin
the CPUs to, or by claiming the CPUs through DRA too, with a ``matchAttribute``
constraint on ``resource.kubernetes.io/numaNode``. The pods use ResourceClaims (by name,
or made from a template in k), so only a scheduler that allocates claims
(``Adapter.allocates_claims``: the stock kube-scheduler's DynamicResources plugin) can be
asked these questions. The harness holds the exporter's
report of misaligned pods (its metric and Events) to what the kubelets hold.

* **i** - a DRA GPU beside exclusive CPUs, no constraint: the kubelet pins a 4-CPU pod to
  NUMA node 1 (node 0 has 3 CPUs besides the reserved one), while an allocator taking
  the first free GPU gives it one on node 0.
* **j** - CPUs claimed through DRA as well (the CPU driver ``dra.cpu``: one device per
  NUMA node whose CPUs claims consume), GPU and CPUs under one ``matchAttribute``: both
  from one NUMA node, or Pending when no NUMA node holds both.
* **k** - a mixed fleet: DRA GPUs on one node, device-plugin GPUs on the other, pods of
  both kinds at once; the DRA pods' claims come from ResourceClaimTemplates (the
  resourceclaim controller makes each pod's claim and names it in the pod's status), the
  path Jobs and Deployments take.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.cluster import unique
from tests.e2e.outcome import Outcome, node_of, ran
from tests.e2e.scenarios.checking import all_ran, never_bound, none_rejected
from tests.e2e.scenarios.model import AwaitDecided, PodTemplate, Scenario, Submit

#: The DRA GPU driver of the scenarios' nodes (NVIDIA's, as profiles know it).
DRA_GPU = "gpu.nvidia.com"


def dra_node(
    *,
    gpus: int,
    dra: bool = True,
    reserved: str | None = "0",
    cpu_driver: bool = False,
    prefix: str = "e2e",
) -> dict[str, Any]:
    """Two NUMA nodes of 4 CPUs and 8Gi under ``single-numa-node``, ``gpus`` GPUs each:
    DRA GPUs of ``gpu.nvidia.com`` (``dra``), else device-plugin ``nvidia.com/gpu``. With
    ``cpu_driver`` the CPUs are the CPU DRA driver's, and the kubelet pins none (no CPU or
    Memory Manager: the driver manages them); else the static CPU and Memory Managers with
    ``reserved`` CPUs."""
    shape: dict[str, Any] = {
        "numaNodes": 2,
        "coresPerNumaNode": 4,
        "threadsPerCore": 1,
        "memoryPerNumaNode": "8Gi",
    }
    if dra:
        shape["draDevicesPerNumaNode"] = {DRA_GPU: gpus}
    else:
        shape["devicesPerNumaNode"] = {"nvidia.com/gpu": gpus}
    kubelet: dict[str, Any] = {"topologyManagerPolicy": "single-numa-node"}
    node: dict[str, Any] = {"name": unique(prefix), "kubelet": kubelet, "shape": shape}
    if cpu_driver:
        kubelet |= {"cpuManagerPolicy": "none", "memoryManagerPolicy": "None"}
        node["dra"] = {"cpu": {}}
    elif reserved is not None:
        kubelet["reservedSystemCPUs"] = reserved
    return node


def misaligned(o: Outcome) -> list[str]:
    """Workload pods running with DRA devices off their CPUs' and memory's NUMA nodes."""
    return [
        f"{pod}: runs misaligned: {'; '.join(how)}"
        for pod, how in sorted(o.misaligned.items())
        if pod in o.workload
    ]


# ---- i: a DRA GPU and exclusive CPUs, no constraint ------------------------------------

#: 4 exclusive CPUs: only NUMA node 1 holds them (node 0: CPUs 1-3, CPU 0 reserved).
FAR = PodTemplate(name="far", cpu="4", dra_gpus=1)
#: 2 exclusive CPUs: NUMA node 0 (node 1 is full).
NEAR = PodTemplate(name="near", cpu="2", dra_gpus=1)
#: No exclusive CPUs (Burstable): nothing to be misaligned with.
SHARED = PodTemplate(name="shared", cpu="500m", dra_gpus=1, guaranteed=False)


def _nodes_i() -> tuple[dict[str, Any], ...]:
    return (dra_node(gpus=2),)


def _check_i(o: Outcome) -> list[str]:
    return none_rejected(o) + all_ran(o, o.workload) + misaligned(o)


I = Scenario(  # noqa: E741 - the scenario's id, as A-H are theirs
    id="i",
    title="a DRA GPU and exclusive CPUs, no constraint",
    nodes=_nodes_i,
    steps=(
        Submit((FAR,)),
        AwaitDecided("far"),
        Submit((NEAR,)),
        AwaitDecided("near"),
        Submit((SHARED,)),
    ),
    check=_check_i,
    needs_claims=True,
)


# ---- j: GPU and CPUs claimed together, matchAttribute numaNode -------------------------

#: A GPU and 3 CPUs of one NUMA node.
PAIR = PodTemplate(name="pair", cpu="3", dra_gpus=1, dra_cpus=3, same_numa_node=True)
#: 3 CPUs through DRA, no GPU: the NUMA node of ``pair`` has 1 CPU left, so the other.
CPUS = PodTemplate(name="cpus", cpu="3", dra_cpus=3)
#: A GPU and 2 CPUs of one NUMA node: the node as a whole has both (2 CPUs, a GPU), but
#: one NUMA node has the GPU and 1 CPU, the other 1 CPU and no GPU.
NO_ROOM = PodTemplate(name="no-room", cpu="2", dra_gpus=1, dra_cpus=2, same_numa_node=True)


def _nodes_j() -> tuple[dict[str, Any], ...]:
    return (dra_node(gpus=1, cpu_driver=True),)


def _check_j(o: Outcome) -> list[str]:
    return (
        none_rejected(o)
        + all_ran(o, ["pair", "cpus"])
        + never_bound(o, ["no-room"])
        + misaligned(o)
    )


J = Scenario(
    id="j",
    title="a DRA GPU and DRA CPUs under matchAttribute numaNode",
    nodes=_nodes_j,
    steps=(
        Submit((PAIR,)),
        AwaitDecided("pair"),
        Submit((CPUS,)),
        AwaitDecided("cpus"),
        Submit((NO_ROOM,)),
        AwaitDecided("no-room"),
    ),
    check=_check_j,
    needs_claims=True,
)


# ---- k: a mixed fleet ------------------------------------------------------------------

#: DRA pods (node 0 has the DRA GPUs) and device-plugin pods (node 1), 2 CPUs and a GPU
#: each. On node 0 the first takes NUMA node 0's CPUs (3 besides the reserved one), the
#: second NUMA node 1's; an allocator taking the first free GPU gives both node 0's. The
#: DRA pods' claims are made from ResourceClaimTemplates, as a Job's or a Deployment's
#: pods' are (i and j use claims by name).
MIXED = (
    PodTemplate(name="dra-0", cpu="2", dra_gpus=1, claim_template=True),
    PodTemplate(name="plugin-0", cpu="2", gpus=1),
    PodTemplate(name="dra-1", cpu="2", dra_gpus=1, claim_template=True),
    PodTemplate(name="plugin-1", cpu="2", gpus=1),
)


def _nodes_k() -> tuple[dict[str, Any], ...]:
    return (dra_node(gpus=2), dra_node(gpus=2, dra=False, reserved=None))


def _check_k(o: Outcome) -> list[str]:
    problems = none_rejected(o) + all_ran(o, o.workload) + misaligned(o)
    for template in MIXED:
        pod = o.pod(template.name)
        want = o.node(0 if template.claims else 1)
        if pod is not None and ran(pod) and node_of(pod) != want:
            problems.append(f"{template.name}: ran on {node_of(pod)}, its GPUs are on {want}")
    return problems


K = Scenario(
    id="k",
    title="a mixed fleet: DRA GPUs on one node, device-plugin GPUs on another",
    nodes=_nodes_k,
    steps=tuple(step for t in MIXED for step in (Submit((t,)), AwaitDecided(t.name))),
    check=_check_k,
    needs_claims=True,
)
