"""The ``single-numa-node`` evaluator: every admission step must fit one NUMA zone.

The |M| = 1 case of the merge (``policy_single_numa_node.go``): only single-node preferred
hints survive, so a step is admitted iff one zone is a preferred hint of every resource
it asks aligned; the lowest such zone is chosen. A resource whose capacity needs more
than one zone has no preferred single-node hint, so the pod is rejected even when enough
is free across zones.
"""

from __future__ import annotations

from typing import ClassVar

from fakenrt.scheduler.alignment import Choice, walk_units
from fakenrt.scheduler.choice import choose_mask
from fakenrt.scheduler.evaluator import Evaluation
from fakenrt.scheduler.hints import ResourceHints
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.requests import AlignmentUnit
from fakenrt.scheduler.topology import POLICY_SINGLE_NUMA_NODE


class SingleNUMANodeEvaluator:
    policy: ClassVar[str] = POLICY_SINGLE_NUMA_NODE

    def _choose(self, unit: AlignmentUnit, hints: list[ResourceHints]) -> Choice:
        return choose_mask(self.policy, unit, hints, single_node=True)

    def evaluate(self, ledger: ZoneLedger, units: tuple[AlignmentUnit, ...]) -> Evaluation:
        return walk_units(ledger, units, self._choose)
