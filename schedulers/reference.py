"""The reference scheduler (``fakenrt scheduler run``, docs/scheduler.md) in each mode:
reconstructing zone use from observed (else predicted) placements, its default, and
trusting NRT ``available`` however old (``reconstructAvailable: false``)."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path

from schedulers.adapter import Adapter, Claim, Component, Unschedulable

#: ``fakenrt`` with this interpreter (the project's virtualenv).
FAKENRT = f"{shlex.quote(sys.executable)} -c 'from fakenrt.cli import main; main()'"
#: What the plugin's FailedScheduling message names when it refuses a node for NUMA
#: reasons: the Topology Manager policy, or the Memory Manager.
REASON = r"single-numa-node|restricted|memory manager"
_RUN = (
    f"{FAKENRT} scheduler run --kubeconfig {{kubeconfig}} --scheduler-name {{scheduler_name}}"
    " --node-selector {node_selector} --period 0.5"
)
_STALE_NRT_ARGS = "reconstructAvailable: false\n"

RECONSTRUCTION = Adapter(
    scheduler="reference",
    mode="reconstruction",
    summary="the reference scheduler, rebuilding zone use from observed (else predicted) "
    "placements (its default)",
    scheduler_name="numa-reference",
    components=(Component(name="scheduler", command=_RUN),),
    predicts_placement=True,
    unschedulable=Unschedulable(reason=REASON, event_reasons=("FailedScheduling",)),
    claims=frozenset(Claim),
    # It retries a pod after 1, 2, 4, 8 s, and the next cycle (0.5 s) sees every change.
    quiet_s=5.0,
    in_cluster_args="{}\n",
    here=Path(__file__).parent,
)
STALE_NRT = replace(
    RECONSTRUCTION,
    mode="stale-nrt",
    default=False,
    summary="the reference scheduler trusting NRT available however old "
    "(reconstructAvailable: false)",
    components=(Component(name="scheduler", command=_RUN + " --args {workdir}/stale-nrt.yaml"),),
    files={"stale-nrt.yaml": _STALE_NRT_ARGS},
    claims=frozenset(Claim) - {Claim.LAG_SAFE},
    trusts_stale_nrt=True,
    in_cluster_args=_STALE_NRT_ARGS,
)
ADAPTERS = (RECONSTRUCTION, STALE_NRT)
