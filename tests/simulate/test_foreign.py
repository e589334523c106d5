"""Foreign capacity in the simulation: a profile's ``allocated`` and ``foreignRequests``
are pods the controller core creates (fakenrt.kubelet.foreign), so every strategy sees
them as a scheduler sees them in a cluster - whole-node fit counts their requests, the
exporter observes the zones they hold, the NRT fingerprint covers them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.simulate.engine import simulate
from fakenrt.simulate.strategies import BY_NAME, NAMES
from tests.simulate.builders import pod, profiles, scenario, workload

HOUR = 3600.0

# The issue's smallest case: one 2-zone single-numa-node node, 1 of zone 0's 2 GPUs held
# by a pod outside the simulation, two 2-GPU pods. Only zone 1 can take one; the other
# must stay pending (reconstruction used to see zone 0 free: 800 TopologyAffinityErrors per
# 1,000 binds).
ONE_GPU_ALLOCATED = """
nodes:
- name: n1
  kubelet: {topologyManagerPolicy: single-numa-node}
  zones:
  - {id: 0, cpus: "0-7", memory: 64Gi, devices: {nvidia.com/gpu: 2},
     allocated: {nvidia.com/gpu: 1}}
  - {id: 1, cpus: "8-15", memory: 64Gi, devices: {nvidia.com/gpu: 2}}
"""

# foreignRequests {cpu: 30} on a 32-CPU node: two 1-CPU pods fit, the third must wait (the
# oracle used to bind it and get OutOfcpu).
CPU_REQUESTED = """
nodes:
- name: n1
  kubelet: {topologyManagerPolicy: single-numa-node}
  shape: {numaNodes: 2, coresPerNumaNode: 16, threadsPerCore: 1, memoryPerNumaNode: 64Gi,
          devicesPerNumaNode: {nvidia.com/gpu: 2}}
  foreignRequests: {cpu: 30}
"""


@pytest.mark.parametrize("strategy", NAMES)
@pytest.mark.parametrize("nrt_delay", [0.0, 30.0], ids=["exact-nrt", "lagged-nrt"])
def test_gpus_a_profile_marks_allocated_are_seen(*, strategy: str, nrt_delay: float) -> None:
    nodes = profiles(ONE_GPU_ALLOCATED)
    items = workload(*((0, HOUR, pod(f"p{i}", gpu=2, cpu=2)) for i in range(2)))
    run = scenario(nodes, items, duration=600.0, nrt_delay=nrt_delay, requeue=True)
    f = simulate(run, BY_NAME[strategy]).figures
    assert (f["binds"], f["admission_failures_by_reason"]) == (1, {})
    assert (f["running_at_end"], f["pending_at_end"]) == (1, 1)


@pytest.mark.parametrize("strategy", NAMES)
def test_foreign_requests_count_in_whole_node_fit(strategy: str) -> None:
    nodes = profiles(CPU_REQUESTED)
    items = workload(*((0, HOUR, pod(f"p{i}", cpu=1)) for i in range(3)))
    run = scenario(nodes, items, duration=600.0, requeue=True)
    f = simulate(run, BY_NAME[strategy]).figures
    assert (f["binds"], f["admission_failures_by_reason"]) == (2, {})
    assert (f["running_at_end"], f["pending_at_end"]) == (2, 1)


def _node(name: str, policy: str, allocated: dict[int, dict[str, int]], cpu_requests: int) -> str:
    zones = []
    for z in range(2):
        held = allocated.get(z, {})
        extra = f", allocated: {held}" if held else ""
        zones.append(
            f'  - {{id: {z}, cpus: "{z * 8}-{z * 8 + 7}", memory: 64Gi, '
            f"devices: {{nvidia.com/gpu: 4}}{extra}}}"
        )
    requests = f"  foreignRequests: {{cpu: {cpu_requests}, pods: 2}}\n" if cpu_requests else ""
    return (
        f"- name: {name}\n  kubelet: {{topologyManagerPolicy: {policy}}}\n{requests}  zones:\n"
        + "\n".join(zones)
        + "\n"
    )


held_zone = st.dictionaries(
    st.sampled_from(["cpu", "nvidia.com/gpu"]), st.integers(1, 3), max_size=2
)


@settings(max_examples=25, deadline=None)
@given(
    allocated=st.lists(
        st.dictionaries(st.integers(0, 1), held_zone, max_size=2), min_size=2, max_size=2
    ),
    cpu_requests=st.lists(st.integers(0, 6), min_size=2, max_size=2),
    arrivals=st.lists(
        st.tuples(st.integers(0, 600), st.integers(30, 1200), st.integers(1, 4), st.integers(1, 6)),
        min_size=1,
        max_size=12,
    ),
    strategy=st.sampled_from(["oracle", "reconstruct-observed"]),
)
def test_no_rejection_without_lag_on_nodes_with_foreign_capacity(
    *,
    allocated: list[dict[int, dict[str, int]]],
    cpu_requests: list[int],
    arrivals: list[tuple[int, int, int, int]],
    strategy: str,
) -> None:
    """Without NRT lag the oracle and the reconstruction from observed placements see
    exactly what the kubelet counts: no rejection of any kind."""
    text = "nodes:\n" + "".join(
        _node(f"n{i}", policy, allocated[i], cpu_requests[i])
        for i, policy in enumerate(("restricted", "single-numa-node"))
    )
    nodes = profiles(text)
    items = workload(
        *(
            (float(at), float(run), pod(f"p{i}", gpu=gpu, cpu=cpu))
            for i, (at, run, gpu, cpu) in enumerate(arrivals)
        )
    )
    result = simulate(scenario(nodes, items, duration=2400.0), BY_NAME[strategy])
    assert result.figures["admission_failures_by_reason"] == {}
