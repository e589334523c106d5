"""Scenario d: NRT lag of 5 s +- 3 s on a workload where the lag matters.

Two single-numa-node nodes of two 4-core zones, each with a long-running 3-core pod bound
to it directly (zone use uneven: 1 core free in one zone, 4 in the other). Then pods of 3,
2 and 1 cores arrive one at a time and finish after a few seconds, so pods both arrive and
finish while the nodes' NRT still shows an older state. A 3-core pod landing in the free
zone leaves 1 core in each zone: whole-node accounting still admits a 2-core pod, and an
NRT that has not caught up still shows the zone free - a scheduler trusting it sends the
pod to a kubelet that rejects it (TopologyAffinityError). Reconstructing zone use from
observed (else predicted) placements never does.
"""

from __future__ import annotations

from schedulers.adapter import Claim
from tests.e2e.outcome import Outcome, node_of, phase
from tests.e2e.scenarios.checking import all_ran, none_rejected
from tests.e2e.scenarios.model import AwaitBaseline, PodTemplate, Scenario, Submit
from tests.e2e.topologies import two_zone_node
from tests.e2e.variants import LAG_5S, Variant

#: Arrivals: core counts, one pod every ARRIVAL_GAP_S seconds, each running RUN_DURATION.
ARRIVALS = (3, 2, 1, 2, 3, 2, 2, 1, 3, 2, 2, 1, 3, 2, 2, 2)
ARRIVAL_GAP_S = 0.6
RUN_DURATION = "4s"
ANCHORS = ("anchor-0", "anchor-1")


def _check_d(o: Outcome) -> list[str]:
    problems = none_rejected(o) + all_ran(o, o.workload)
    holding = [
        n
        for n, p in o.pods.items()
        if node_of(p) and phase(p) in ("Pending", "Running") and n in o.allocations
    ]
    expected = [a for a in ANCHORS if a not in o.deleted]
    if sorted(holding) != expected:
        problems.append(f"holding resources at the end: {sorted(holding)}, the anchors expected")
    return problems


D = Scenario(
    id="d",
    title="NRT lag on unevenly used nodes, pods arriving and finishing",
    nodes=lambda: tuple(two_zone_node(policy="single-numa-node") for _ in range(2)),
    controller_args=("--seed", "7"),
    steps=(
        Submit(tuple(PodTemplate(name=a, cpu="3", node=i) for i, a in enumerate(ANCHORS))),
        # The same start for every scheduler: the anchors running, observed, in the NRT.
        AwaitBaseline(ANCHORS),
        Submit(
            tuple(
                PodTemplate(
                    name=f"w{i:02d}-{cores}c",
                    cpu=str(cores),
                    run_duration=RUN_DURATION,
                    delay_s=ARRIVAL_GAP_S if i else 0.0,
                )
                for i, cores in enumerate(ARRIVALS)
            )
        ),
    ),
    check=_check_d,
    predictable=False,
    claim=Claim.LAG_SAFE,
    default_variant=Variant(exporter=True, lag=LAG_5S),
    settle_timeout_s=240.0,
)
