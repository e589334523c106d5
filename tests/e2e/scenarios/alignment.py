"""Scenarios a, b, c and e: where a scheduler places NUMA-aligned pods on empty nodes.

* a - GPU and CPU pods on two single-numa-node nodes of 4 GPUs, one with 2 per zone, one
  with all 4 in zone 0: a 3-GPU pod fits only the second; a 5-CPU pod (4 per zone) no zone.
* b - two 4-core zones, Guaranteed pods of 3, 3 and 2 cores: whole-node accounting admits
  all three, the zones hold two.
* c - 8-GPU pods (12 cores, 12Gi) on restricted nodes of two 4-GPU zones: one per node,
  on both zones, its memory a group over both.
* e - a mixed workload (GPU + CPU, GPU-only Burstable, CPU + memory, Burstable) on a
  single-numa-node and a restricted node: everything runs.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.outcome import Outcome, node_of, ran
from tests.e2e.scenarios.checking import (
    all_ran,
    groups_of,
    never_bound,
    none_rejected,
    zones_of,
)
from tests.e2e.scenarios.model import AwaitDecided, PodTemplate, Scenario, Submit
from tests.e2e.topologies import lopsided_gpu_node, two_zone_node

GPU = "nvidia.com/gpu"
GIB = 1 << 30


# ---- a -------------------------------------------------------------------------------

#: name -> (cores, GPUs) of the pods of a that fit a zone.
A_FITTING = {"three-gpus": (1, 3), "two-gpus": (3, 2), "one-gpu": (1, 1)}


def _a_nodes() -> tuple[dict[str, Any], ...]:
    return (
        two_zone_node(policy="single-numa-node", gpus=2),  # "split"
        lopsided_gpu_node(policy="single-numa-node"),  # "lopsided"
    )


def _check_a(o: Outcome) -> list[str]:
    problems = none_rejected(o) + all_ran(o, A_FITTING) + never_bound(o, ["five-cpus"])
    split, lopsided = o.node(0), o.node(1)
    expected_nodes = {"three-gpus": lopsided, "two-gpus": split}  # lopsided has 1 GPU left
    for name, node in expected_nodes.items():
        pod = o.pod(name)
        if pod is not None and ran(pod) and node_of(pod) != node:
            problems.append(f"{name}: on {node_of(pod)}, only {node} can align it")
    for name, (cpu, gpus) in A_FITTING.items():
        zones = zones_of(o, name)
        if zones is None:
            continue
        if len(zones) != 1:
            problems.append(f"{name}: spans zones {sorted(zones)}")
            continue
        (amounts,) = zones.values()
        if (amounts.get("cpu"), amounts.get(GPU)) != (cpu, gpus):
            problems.append(f"{name}: holds {amounts} in its zone")
    return problems


A = Scenario(
    id="a",
    title="GPU + CPU pods where only some zones can align them",
    nodes=_a_nodes,
    steps=(
        # Every node could hold five-cpus as a whole (so an aligning scheduler's reason is
        # NUMA, not "Insufficient cpu"); no zone can. It is decided on empty nodes.
        Submit(
            (
                PodTemplate(name="three-gpus", cpu="1", gpus=3),
                PodTemplate(name="five-cpus", cpu="5"),
            )
        ),
        AwaitDecided("five-cpus"),
        Submit(
            (
                PodTemplate(name="two-gpus", cpu="3", gpus=2),
                PodTemplate(name="one-gpu", cpu="1", gpus=1),
            )
        ),
    ),
    check=_check_a,
    numa_reason=True,
    blind_scheduler_fails=True,  # five-cpus: 5 cores fit the node, no zone
)


# ---- b -------------------------------------------------------------------------------


def _check_b(o: Outcome) -> list[str]:
    problems = none_rejected(o)
    running = [n for n in o.workload if ran(o.pod(n) or {})]
    if len(running) != 2:
        problems.append(f"{len(running)} of 3 ran ({running}); the zones hold exactly two")
    problems += never_bound(o, [n for n in o.workload if n not in running])
    return problems


B = Scenario(
    id="b",
    title="3, 3 and 2 cores on two 4-core zones",
    nodes=lambda: (two_zone_node(policy="single-numa-node"),),
    steps=(
        Submit(
            (
                PodTemplate(name="three-a", cpu="3"),
                PodTemplate(name="three-b", cpu="3"),
                PodTemplate(name="two", cpu="2"),
            )
        ),
    ),
    check=_check_b,
    numa_reason=True,
    blind_scheduler_fails=True,  # 8 cores fit the node; the zones leave 1 + 1
)


# ---- c -------------------------------------------------------------------------------


def _check_c(o: Outcome) -> list[str]:
    names = ("full-0", "full-1")
    problems = none_rejected(o) + all_ran(o, names)
    nodes = {node_of(p) for p in map(o.pod, names) if p is not None and ran(p)}
    if len(nodes) == 2 and nodes != {o.node(0), o.node(1)}:
        problems.append(f"on {sorted(str(n) for n in nodes)}, one per node expected")
    for name in names:
        zones = zones_of(o, name)
        groups = groups_of(o, name)
        if zones is None or groups is None:
            continue
        if sorted(zones) != [0, 1] or [zones[z].get(GPU) for z in (0, 1)] != [4, 4]:
            problems.append(f"{name}: GPUs { ({z: a.get(GPU) for z, a in zones.items()}) }")
        if sum(a.get("cpu", 0) for a in zones.values()) != 12:
            problems.append(f"{name}: CPUs { ({z: a.get('cpu') for z, a in zones.items()}) }")
        if groups != {frozenset({0, 1}): {"memory": 12 * GIB}}:
            problems.append(f"{name}: memory groups {groups}")
    return problems


C = Scenario(
    id="c",
    title="8-GPU pods over both zones of restricted nodes",
    nodes=lambda: tuple(two_zone_node(policy="restricted", cores=8, gpus=4) for _ in range(2)),
    steps=(
        Submit(
            tuple(PodTemplate(name=f"full-{i}", cpu="12", memory="12Gi", gpus=8) for i in range(2))
        ),
    ),
    check=_check_c,
)


# ---- e -------------------------------------------------------------------------------

#: name -> (cpu, GPUs, Guaranteed)
E_SHAPES = {
    "gpu-cpu": ("2", 1, True),
    "gpu-only": ("500m", 1, False),
    "cpu-mem": ("2", 0, True),
    "burstable": ("1", 0, False),
    "one-core": ("1", 0, True),
    "two-gpu": ("1", 2, True),
}


def _check_e(o: Outcome) -> list[str]:
    problems = none_rejected(o) + all_ran(o, E_SHAPES)
    burstable = zones_of(o, "burstable")
    if burstable:
        problems.append(f"burstable: holds {burstable}, a Burstable pod aligns nothing")
    gpu_only = zones_of(o, "gpu-only")
    if gpu_only is not None and any(set(a) != {GPU} for a in gpu_only.values()):
        problems.append(f"gpu-only: holds {gpu_only}, devices only expected")
    return problems


E = Scenario(
    id="e",
    title="a mixed workload on a single-numa-node and a restricted node",
    nodes=lambda: (
        two_zone_node(policy="single-numa-node", gpus=2),
        two_zone_node(policy="restricted", gpus=2),
    ),
    steps=(
        Submit(
            tuple(
                PodTemplate(name=n, cpu=c, gpus=g, guaranteed=q, memory="1Gi")
                for n, (c, g, q) in E_SHAPES.items()
            )
        ),
    ),
    check=_check_e,
)
