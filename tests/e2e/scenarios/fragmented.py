"""Scenario g: a fleet fragmented by pods bound without any scheduler, then GPU pods that
fit only where the fragmentation allows (seed 000's hole).

Two nodes, one single-numa-node and one restricted, each two zones of 8 cores and 4 GPUs.
On each, two pods of 1 GPU and 5 cores are created with ``spec.nodeName`` - no scheduler,
no placement record of any kind, as an operator's or another scheduler's pods arrive. The
kubelet puts the first in zone 0 and, zone 0 having 3 cores left, the second in zone 1:
every zone has 3 GPUs free, every node 6.

Then, at once, six pods of 2 GPUs and two of 4 GPUs (1 core each). A zone holds one 2-GPU
pod; no zone holds 4 GPUs. At most four pods run; the rest must stay Pending.

* Whole-node accounting sees 6 free GPUs per node: three 2-GPU pods and a 4-GPU pod fit
  "the node", and the kubelet rejects at least two of them - a NUMA-blind scheduler is
  forced into TopologyAffinityErrors.
* A scheduler rebuilding free zones from placement records alone (KAI's default) cannot
  see where the pre-bound pods sit unless an exporter reports them: it believes 4 + 4
  free per node and sends pods the kubelet refuses. With the exporter's observed
  placements it sees them and sends none.
* Trusting NRT works here while NRT is current (the pods arrive after it caught up).
"""

from __future__ import annotations

from typing import Any

from tests.e2e.outcome import Outcome, ran
from tests.e2e.scenarios.checking import never_bound, none_rejected
from tests.e2e.scenarios.model import AwaitBaseline, PodTemplate, Scenario, Submit
from tests.e2e.topologies import two_zone_node

#: Two pre-bound pods per node: the first takes zone 0, the second (5 > 3 cores left
#: there) zone 1.
PREBOUND = tuple(
    PodTemplate(name=f"frag-{node}{ab}", cpu="5", gpus=1, node=node)
    for node in (0, 1)
    for ab in "ab"
)
#: The GPU pods, in submission order: 2-GPU pods with the 4-GPU ones among them.
GPU_PODS = (
    PodTemplate(name="gpu2-0", cpu="1", gpus=2),
    PodTemplate(name="gpu2-1", cpu="1", gpus=2),
    PodTemplate(name="gpu4-0", cpu="1", gpus=4),
    PodTemplate(name="gpu2-2", cpu="1", gpus=2),
    PodTemplate(name="gpu2-3", cpu="1", gpus=2),
    PodTemplate(name="gpu4-1", cpu="1", gpus=4),
    PodTemplate(name="gpu2-4", cpu="1", gpus=2),
    PodTemplate(name="gpu2-5", cpu="1", gpus=2),
)
#: One 2-GPU pod per zone.
MOST_THAT_RUN = 4


def _nodes() -> tuple[dict[str, Any], ...]:
    return tuple(
        two_zone_node(policy=policy, cores=8, gpus=4, memory="16Gi")
        for policy in ("single-numa-node", "restricted")
    )


def _check_g(o: Outcome) -> list[str]:
    problems = none_rejected(o) + never_bound(o, ["gpu4-0", "gpu4-1"])
    running = sum(1 for n in o.workload if ran(o.pod(n) or {}))
    if running != MOST_THAT_RUN:
        problems.append(f"{running} GPU pods ran, the zones hold {MOST_THAT_RUN}")
    return problems


G = Scenario(
    id="g",
    title="a fleet fragmented by pods bound without any scheduler",
    nodes=_nodes,
    steps=(
        Submit(PREBOUND),
        AwaitBaseline(tuple(p.name for p in PREBOUND)),
        Submit(GPU_PODS),
    ),
    check=_check_g,
    blind_scheduler_fails=True,
)
