"""A scorecard record: one scheduler x scenario x variant, from the run's outcome. Pure.

A record is a JSON object. :data:`FIELDS` lists its figures, each with what it means (the
table in docs/scorecard.md is checked against it); a new figure is one more entry, and
readers must ignore keys they do not know. The ``reproducer`` key holds what reruns and
explains the cell: the command, the nodes, the pods and the timeline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schedulers.adapter import Claim
from tests.e2e.claims import claim_problems, unreported
from tests.e2e.outcome import (
    Outcome,
    admission_failure,
    gpus_in_use,
    misalignment_reports,
    node_of,
    phase,
    prediction_agreement,
    ran,
    rejected,
    unrecorded_rejections,
)
from tests.scorecard.matrix import Cell

#: Version of the record format: bumped when a field changes meaning or goes.
FORMAT = 1


@dataclass(frozen=True)
class Field:
    """One figure of a record: its key, what it means, how it is computed."""

    name: str
    meaning: str
    value: Callable[[Cell, Outcome], Any]


def _count(outcome: Outcome, predicate: Callable[[Mapping[str, Any]], bool]) -> int:
    return sum(1 for p in outcome.workload_pods() if predicate(p))


def _misaligned(outcome: Outcome) -> int | None:
    if outcome.misaligned_metric is None:
        return None
    return sum(1 for pod in outcome.workload if pod in outcome.misaligned_metric)


def _findings(cell: Cell, outcome: Outcome) -> dict[str, list[str]]:
    return claim_problems(cell.scheduler, cell.scenario, outcome)


def _harness(cell: Cell, outcome: Outcome) -> dict[str, list[str]]:
    return {
        "rejections_without_kubelet_record": unrecorded_rejections(outcome),
        "held_twice": list(outcome.double_allocations),
        "exporter_disagrees": list(outcome.observation_mismatches),
        "nrt_not_converged": list(outcome.nrt_mismatches),
        "misaligned_misreported": misalignment_reports(outcome),
    }


FIELDS: tuple[Field, ...] = (
    Field(
        "scheduler",
        "the scheduler adapter's id (`<scheduler>-<mode>`)",
        lambda c, o: c.scheduler.id,
    ),
    Field(
        "scheduler_family",
        "the scheduler (what `--scheduler` picks)",
        lambda c, o: c.scheduler.scheduler,
    ),
    Field(
        "default_mode",
        "whether this is the scheduler's default mode",
        lambda c, o: c.scheduler.default,
    ),
    Field("scenario", "the scenario, `a`-`k` (docs/e2e.md)", lambda c, o: c.scenario.id),
    Field(
        "variant",
        "`exporter`/`no-exporter` and `lag0`/`lag5` (5 s ± 3 s)",
        lambda c, o: c.variant.id,
    ),
    Field(
        "exporter",
        "whether the exporter annotated observed placements",
        lambda c, o: c.variant.exporter,
    ),
    Field(
        "nrt_lag",
        "the NRT lag: delay + U(0, jitter)",
        lambda c, o: f"{c.variant.lag.delay}+U(0,{c.variant.lag.jitter})",
    ),
    Field(
        "default_variant",
        "whether this is the scenario's default variant (the pytest suite's)",
        lambda c, o: c.default_variant,
    ),
    Field(
        "submitted",
        "pods the scheduler was given (pods bound without a scheduler excluded)",
        lambda c, o: len(o.workload),
    ),
    Field("bound", "of those, bound to a node", lambda c, o: _count(o, lambda p: bool(node_of(p)))),
    Field(
        "running",
        "of those, admitted and started by the kubelet (Running, or Succeeded)",
        lambda c, o: _count(o, ran),
    ),
    Field(
        "running_at_end",
        "of those, Running when the run settled",
        lambda c, o: _count(o, lambda p: phase(p) == "Running"),
    ),
    Field(
        "topology_affinity_errors",
        (
            "of those, refused by the kubelet's Topology Manager: bound where no zone could align "
            "them - the scheduler's mistakes"
        ),
        lambda c, o: _count(o, rejected),
    ),
    Field(
        "other_admission_errors",
        "of those, refused by the kubelet for another reason (OutOfcpu, ...)",
        lambda c, o: _count(o, lambda p: admission_failure(p) is not None),
    ),
    Field("pending", "of those, never bound", lambda c, o: _count(o, lambda p: not node_of(p))),
    Field(
        "unreported_pending",
        (
            "of the pending ones, those the scheduler never reported unschedulable (in a and b: "
            "with its NUMA reason)"
        ),
        lambda c, o: len(
            unreported(o, c.scheduler.unschedulable.reason if c.scenario.numa_reason else None)
        ),
    ),
    Field(
        "prediction_agreement",
        (
            "of the admitted pods carrying a predicted placement, the share whose predicted zones "
            "(CPUs, devices) are the kubelet's; null where the scheduler predicts nothing"
        ),
        lambda c, o: prediction_agreement(o).ratio,
    ),
    Field(
        "predicted_pods",
        "admitted pods carrying a predicted placement",
        lambda c, o: prediction_agreement(o).predicted,
    ),
    Field(
        "exact_predictions",
        (
            "of those, predictions equal to the kubelet's allocation in every amount, memory and "
            "memory groups included"
        ),
        lambda c, o: prediction_agreement(o).exact,
    ),
    Field(
        "misaligned",
        (
            "of those, Running with DRA devices on a NUMA node other than their exclusive CPUs "
            "and memory, as the exporter reports them (`numa_exporter_dra_pod_misaligned`, held "
            "to what the kubelets hold); null where nobody reads it (no ResourceClaims, no "
            "exporter)"
        ),
        lambda c, o: _misaligned(o),
    ),
    Field(
        "gpus_in_use",
        "GPUs the kubelets hold for the scheduler's pods when the run settled",
        lambda c, o: gpus_in_use(o),
    ),
    Field(
        "seconds_to_last_bind",
        "from the first pod submitted to the scheduler to its last bind (null: nothing bound)",
        lambda c, o: o.seconds_to_last_bind(),
    ),
    Field(
        "settled",
        "whether every pod reached a state it keeps before the scenario's timeout",
        lambda c, o: o.settled,
    ),
    Field(
        "seconds", "the run's length, from the first step until settled", lambda c, o: o.duration_s
    ),
    Field(
        "claims",
        "the claims the adapter makes (asserted in the default variant)",
        lambda c, o: sorted(x.value for x in c.scheduler.claims),
    ),
    Field(
        "findings",
        (
            "per claim, what in this run contradicts it, for every claim, made or not; "
            "`unclaimable`: what no claim covers (a prediction a finishing pod overtook)"
        ),
        _findings,
    ),
    Field(
        "harness_problems",
        (
            "what the harness itself got wrong (asserted empty): rejections without the kubelet's "
            "record, resources held twice, exporter or NRT not caught up"
        ),
        _harness,
    ),
    Field(
        "trusts_stale_nrt",
        "the adapter is known to trust a stale NRT",
        lambda c, o: c.scheduler.trusts_stale_nrt,
    ),
    Field(
        "blind_scheduler_fails",
        "the scenario forces a NUMA-blind scheduler into a TopologyAffinityError",
        lambda c, o: c.scenario.blind_scheduler_fails,
    ),
    Field(
        "parameters",
        "the scenario's parameters (h: the churn's length)",
        lambda c, o: dict(c.scenario.parameters),
    ),
    Field("notes", "what the run gave up waiting for", lambda c, o: list(o.notes)),
)


def record(
    cell: Cell,
    outcome: Outcome,
    *,
    command: str,
    nodes: Sequence[Mapping[str, Any]] = (),
    manifests: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The record of ``cell`` from its ``outcome``; ``command`` reruns it, ``nodes`` and
    ``manifests`` are the profile nodes and the pods it ran."""
    out: dict[str, Any] = {f.name: f.value(cell, outcome) for f in FIELDS}
    out["reproducer"] = {
        "command": command,
        "nodes": [dict(n) for n in nodes],
        "pods": [dict(m) for m in manifests],
        "timeline": [[t.at_s, t.pod, t.what, t.detail] for t in outcome.timeline],
    }
    return out


def failed_record(cell: Cell, error: str, *, command: str) -> dict[str, Any]:
    """The record of a cell the harness could not run (a component that would not start,
    a baseline never reached): no figures, the error as a harness problem."""
    return {
        "scheduler": cell.scheduler.id,
        "scheduler_family": cell.scheduler.scheduler,
        "default_mode": cell.scheduler.default,
        "scenario": cell.scenario.id,
        "variant": cell.variant.id,
        "exporter": cell.variant.exporter,
        "default_variant": cell.default_variant,
        "claims": sorted(x.value for x in cell.scheduler.claims),
        "trusts_stale_nrt": cell.scheduler.trusts_stale_nrt,
        "blind_scheduler_fails": cell.scenario.blind_scheduler_fails,
        "parameters": dict(cell.scenario.parameters),
        "harness_problems": {"error": [error]},
        "reproducer": {"command": command, "nodes": [], "pods": [], "timeline": []},
    }


def not_applicable_record(cell: Cell, reason: str, *, command: str) -> dict[str, Any]:
    """The record of a cell whose question the scheduler cannot be asked (it allocates no
    ResourceClaims, the scenario's pods use them): nothing ran, nothing to judge."""
    rec = failed_record(cell, "", command=command)
    rec["harness_problems"] = {}
    rec["not_applicable"] = reason
    return rec


def broken_claims(rec: Mapping[str, Any]) -> list[str]:
    """The problems under the claims the record's adapter makes."""
    made = set(rec.get("claims") or [])
    return [
        f"{claim}: {p}"
        for claim, problems in (rec.get("findings") or {}).items()
        if claim in made
        for p in problems
    ]


def harness_problems(rec: Mapping[str, Any]) -> list[str]:
    return [
        f"{kind}: {p}" for kind, found in (rec.get("harness_problems") or {}).items() for p in found
    ]


def all_findings(rec: Mapping[str, Any]) -> list[str]:
    """Everything the record says the scheduler got wrong, claimed or not."""
    return [
        f"{claim}: {p}" for claim, problems in (rec.get("findings") or {}).items() for p in problems
    ]


ALL_CLAIMS = tuple(c.value for c in Claim)


#: The matrix row holding each scenario's default variant.
DEFAULT_ROW = "default"


def matrix_row(rec: Mapping[str, Any]) -> str:
    """The row of a record within its scheduler's rows of the matrix: each scenario's
    default variant shares one (:data:`DEFAULT_ROW`); every other variant has its own."""
    return DEFAULT_ROW if rec.get("default_variant") else str(rec.get("variant"))
