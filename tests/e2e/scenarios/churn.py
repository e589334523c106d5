"""Scenario h: churn - pods arriving and finishing for a while under NRT lag.

Two nodes, one single-numa-node and one restricted, each two zones of 6 cores, 2 GPUs and
12Gi. Pods arrive about every 1.5 s (exponential gaps, seeded: the same arrivals in every
run) and run 5-15 s: 1-GPU pods of 2 cores, 2-GPU pods of 2 cores (a whole zone's GPUs),
and CPU pods of 2 or 4 cores. The fleet stays busy, zones fragment and free up while the
NRT (5 s +- 3 s behind by default) shows an older state. Every pod fits an empty zone, so
a correct scheduler runs them all, some after waiting, with no TopologyAffinityError.

How long the arrivals last is a parameter: :data:`CI_SECONDS` for the pytest suite and the
scorecard's CI part, :data:`FULL_SECONDS` for the full scorecard.
"""

from __future__ import annotations

import random
from typing import Any

from schedulers.adapter import Claim
from tests.e2e.outcome import Outcome
from tests.e2e.scenarios.checking import all_ran, none_rejected
from tests.e2e.scenarios.model import PodTemplate, Scenario, Submit
from tests.e2e.topologies import two_zone_node
from tests.e2e.variants import LAG_5S, Variant

CI_SECONDS = 45
FULL_SECONDS = 180
SEED = 18
MEAN_GAP_S = 1.5
#: (label, cores, GPUs, weight)
SHAPES = (("g1", 2, 1, 4), ("g2", 2, 2, 2), ("c2", 2, 0, 2), ("c4", 4, 0, 2))


def arrivals(seconds: float, *, seed: int = SEED) -> tuple[PodTemplate, ...]:
    """The pods arriving during ``seconds``: exponential gaps of mean :data:`MEAN_GAP_S`,
    shapes by weight, run times 5-15 s - the same for the same arguments."""
    rng = random.Random(seed)
    out: list[PodTemplate] = []
    at = gap = 0.0
    while True:
        label, cores, gpus, _ = rng.choices(SHAPES, weights=[s[3] for s in SHAPES])[0]
        run_s = rng.randint(5, 15)
        out.append(
            PodTemplate(
                name=f"h{len(out):03d}-{label}",
                cpu=str(cores),
                gpus=gpus,
                run_duration=f"{run_s}s",
                delay_s=round(gap, 1),
            )
        )
        gap = rng.expovariate(1 / MEAN_GAP_S)
        at += gap
        if at >= seconds:
            return tuple(out)


def _nodes() -> tuple[dict[str, Any], ...]:
    return tuple(
        two_zone_node(policy=policy, cores=6, gpus=2, memory="12Gi")
        for policy in ("single-numa-node", "restricted")
    )


def _check_h(o: Outcome) -> list[str]:
    return none_rejected(o) + all_ran(o, o.workload)


def churn(seconds: int) -> Scenario:
    """Scenario h with arrivals during ``seconds``."""
    return Scenario(
        id="h",
        title=f"churn: pods arriving and finishing for {seconds} s",
        nodes=_nodes,
        controller_args=("--seed", "18"),
        steps=(Submit(arrivals(seconds)),),
        check=_check_h,
        predictable=False,
        claim=Claim.LAG_SAFE,
        default_variant=Variant(exporter=True, lag=LAG_5S),
        settle_timeout_s=240.0,
        parameters={"churn_seconds": seconds},
    )


H = churn(CI_SECONDS)
