"""The columns of ``fakenrt simulate``'s tables and what each one means: one list, used by
the terminal table, the ``--help`` glossary, the report's tables and its glossary (and
checked against docs/simulate.md by the tests). Pure."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    #: The header in the terminal and the report.
    header: str
    #: The key in ``--json`` (``strategies.<name>.<key>``, or of a breakdown's row).
    key: str
    #: How it is written (:mod:`fakenrt.simulate.numbers`).
    kind: str
    meaning: str


#: The outcomes table: what happened to the pods and the GPUs, per strategy.
OUTCOMES = (
    Column(
        "binds",
        "binds",
        "count",
        "pods bound to a node by the scheduler, re-created pods included",
    ),
    Column(
        "TAE/1k",
        "topology_affinity_errors_per_1000_binds",
        "per1k",
        "binds the kubelet rejected with TopologyAffinityError (no NUMA alignment its "
        "Topology Manager policy accepts), per 1,000 binds",
    ),
    Column(
        "other/1k",
        "other_admission_failures_per_1000_binds",
        "per1k",
        "binds the kubelet rejected for another reason (OutOfcpu, OutOfmemory, "
        "UnexpectedAdmissionError...), per 1,000 binds",
    ),
    Column("done", "completed", "count", "workload pods that ran to completion"),
    Column("running", "running_at_end", "count", "workload pods Running at the end"),
    Column(
        "waiting",
        "waiting_after_rejection",
        "count",
        "workload pods rejected by a kubelet, re-created and not bound again by the end",
    ),
    Column(
        "never placed",
        "never_placed",
        "count",
        "workload pods that arrived and were never bound to any node",
    ),
    Column(
        "dropped",
        "dropped",
        "count",
        "workload pods rejected and not re-created (re-creations used up, or --no-requeue)",
    ),
    Column(
        "GPU-h",
        "gpu_hours",
        "hours",
        "GPU-hours delivered: GPUs held by Running pods, summed over simulated time",
    ),
    Column(
        "GPU-h lost",
        "gpu_hours_lost",
        "hours",
        "GPU-hours the strategy delivered fewer than the best strategy of the run",
    ),
    Column(
        "util",
        "gpu_utilization",
        "share",
        "GPU-hours delivered as a share of the GPU-hours the cluster had",
    ),
    Column(
        "pend p50 s",
        "pending_seconds_p50",
        "seconds",
        "median seconds from a Pod object's creation to its bind",
    ),
    Column(
        "pend p99 s",
        "pending_seconds_p99",
        "seconds",
        "99th percentile of the seconds from creation to bind",
    ),
)

#: The scheduler's view: why the outcomes differ.
VIEW = (
    Column("TAE", "topology_affinity_errors", "count", "TopologyAffinityError rejections"),
    Column("other", "other_admission_failures", "count", "rejections for any other reason"),
    Column(
        "requeued",
        "requeued",
        "count",
        "rejected pods the workload's controller re-created as <name>-r<n>",
    ),
    Column(
        "stranded",
        "stranded_gpus_mean",
        "gpus",
        "mean free GPUs on nodes where no pending GPU pod fits aligned (0 while no GPU pod waits)",
    ),
    Column(
        "agree",
        "placement_agreement",
        "share",
        "observed pods whose predicted NUMA zones equal the zones the exporter observed",
    ),
    Column(
        "stale NRT",
        "stale_nrt_read_share",
        "share",
        "node reads at scheduling cycles whose published NRT did not yet show the "
        "kubelet's latest change (strategies that trust NRT available)",
    ),
    Column(
        "stale max s",
        "stale_nrt_age_max_seconds",
        "seconds",
        "the longest a node's NRT lagged the kubelet when it was read",
    ),
)

#: The DRA mode (``--dra``): pods whose DRA GPUs the kubelet did not align.
DRA = (
    Column(
        "DRA pods",
        "dra_pods",
        "count",
        "Pod objects that started with DRA GPUs (ResourceClaims the kubelet prepared after "
        "admission, aligned with nothing)",
    ),
    Column(
        "misaligned",
        "misaligned",
        "count",
        "of those, pods with a DRA GPU on none of the NUMA nodes of their container's "
        "exclusive CPUs and memory (the exporter's misaligned)",
    ),
    Column(
        "misaligned share",
        "misaligned_share",
        "share",
        "misaligned pods as a share of the DRA pods",
    ),
)

#: The breakdown by node shape (the profile the nodes copy), per strategy.
BY_NODE_SHAPE = (
    Column("nodes", "nodes", "count", "nodes of the shape"),
    Column("GPUs", "gpus", "count", "GPUs of those nodes"),
    Column("binds", "binds", "count", "binds to nodes of the shape"),
    Column("TAE", "topology_affinity_errors", "count", "TopologyAffinityErrors there"),
    Column("other", "other_admission_failures", "count", "other rejections there"),
    Column("GPU-h", "gpu_hours", "hours", "GPU-hours delivered by nodes of the shape"),
    Column("util", "gpu_utilization", "share", "those GPU-hours as a share of the shape's"),
)

#: The breakdown by pod class, per strategy.
BY_POD_CLASS = (
    Column("pods", "pods", "count", "workload pods of the class that arrived"),
    Column("done", "completed", "count", "ran to completion"),
    Column("running", "running_at_end", "count", "Running at the end"),
    Column("waiting", "waiting_after_rejection", "count", "re-created, not bound again"),
    Column("never placed", "never_placed", "count", "never bound"),
    Column("dropped", "dropped", "count", "rejected, not re-created"),
    Column("TAE", "topology_affinity_errors", "count", "TopologyAffinityErrors"),
    Column("other", "other_admission_failures", "count", "other rejections"),
    Column("GPU-h", "gpu_hours", "hours", "GPU-hours delivered to the class"),
    Column(
        "pend p50 s",
        "first_bind_seconds_p50",
        "seconds",
        "median seconds from arrival to the first bind",
    ),
)

#: The rejection drill-down (the report, and ``--rejections FILE``).
REJECTIONS = (
    Column("time s", "at_seconds", "seconds", "simulated seconds when the kubelet rejected it"),
    Column("pod", "pod", "count", "the rejected Pod object (namespace/name)"),
    Column("node", "node", "count", "the node it was bound to"),
    Column("node shape", "node_shape", "count", "the profile that node copies"),
    Column("class", "pod_class", "count", "the workload pod's class"),
    Column("reason", "reason", "count", "the kubelet's reason (status.reason)"),
    Column("message", "message", "count", "the kubelet's message (status.message)"),
)


def glossary_lines(width: int = 79) -> list[str]:
    """Every column of the terminal tables and its meaning, wrapped to ``width`` (for
    ``--help``)."""
    out = []
    for title, columns in (
        ("outcomes", OUTCOMES),
        ("the scheduler's view", VIEW),
        ("DRA (--dra)", DRA),
    ):
        out.append(f"Columns of {title}:")
        name = max(len(c.header) for c in columns)
        for c in columns:
            lines = textwrap.wrap(c.meaning, width - name - 4)
            out.append(f"  {c.header.ljust(name)}  {lines[0]}")
            out += [f"  {' ' * name}  {line}" for line in lines[1:]]
    return out
