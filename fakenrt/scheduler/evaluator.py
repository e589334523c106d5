"""The one evaluator interface, its result, and the factory that picks one per policy.

An evaluator answers, for one pod on one node: would the kubelet's Topology Manager admit
it, and if so which zones (and how much in each) the in-cycle reservation should charge.
``single-numa-node`` and ``restricted`` have an evaluator each (their own modules);
``best-effort`` and ``none`` never reject on topology grounds, so the filter passes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import EMPTY_PLACEMENT, Placement
from fakenrt.scheduler.requests import AlignmentUnit


@dataclass(frozen=True)
class Evaluation:
    """``fit``: the kubelet would admit. ``reason``: why not (None when it fits).
    ``placement``: what the reservation charges."""

    fit: bool
    reason: str | None = None
    placement: Placement = EMPTY_PLACEMENT


class Evaluator(Protocol):
    """Predicts the Topology Manager's verdict for one pod on one node."""

    policy: ClassVar[str]

    def evaluate(self, ledger: ZoneLedger, units: tuple[AlignmentUnit, ...]) -> Evaluation:
        """Pure: reads ``ledger`` (never changes it) and the pod's admission steps."""
        ...


def evaluator_for(policy: str, *, prefer_closest: bool = False) -> Evaluator | None:
    """The evaluator for a Topology Manager policy; None for policies that never reject
    (``none``, ``best-effort``). Raises ValueError for an unknown policy.
    ``prefer_closest``: the kubelets run with ``prefer-closest-numa-nodes`` (which the
    kubelet ignores under single-numa-node)."""
    from fakenrt.scheduler.restricted import RestrictedEvaluator
    from fakenrt.scheduler.single_numa_node import SingleNUMANodeEvaluator
    from fakenrt.scheduler.topology import POLICY_BEST_EFFORT, POLICY_NONE

    if policy == SingleNUMANodeEvaluator.policy:
        return SingleNUMANodeEvaluator()
    if policy == RestrictedEvaluator.policy:
        return RestrictedEvaluator(prefer_closest=prefer_closest)
    if policy in (POLICY_NONE, POLICY_BEST_EFFORT):
        return None
    raise ValueError(f"unknown Topology Manager policy {policy!r}")
