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
    # Even without NRT lag, NRT trails the binds by the admission window (the kubelet's
    # watch, its admission, the publication, the scheduler's watch): a pod of the next
    # cycle can be placed on a zone an earlier pod, bound and not yet admitted, takes -
    # predicted wrong, or rejected where no other zone fits. Only reconstruction from the
    # bound pods closes that window, so this mode promises neither alignment nor exact
    # predictions (seen: the full matrix's g, exporter-lag0, at load 5, docs/scorecard.md).
    claims=frozenset({Claim.REPORTS_UNSCHEDULABLE}),
    trusts_stale_nrt=True,
    in_cluster_args=_STALE_NRT_ARGS,
)
ADAPTERS = (RECONSTRUCTION, STALE_NRT)
