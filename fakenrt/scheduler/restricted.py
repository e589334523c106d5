"""The ``restricted`` evaluator: every admission step must get a preferred merged hint.

Admit iff some NUMA mask M is, for every resource the step aligns, a preferred hint: its
width is that resource's minimal width by capacity (all CPUs, all devices, allocatable
memory) and M has the request available (``policy_restricted.go`` admits iff the best
merged hint is preferred). The narrowest such M, lowest ids first, is chosen. This
reproduces the kubelet's own rejections too: 4 GPUs + 1 CPU on 2+2 GPUs per zone is
rejected (GPU width 2, CPU width 1), and a single-zone mask preferred by capacity but no
longer available is rejected although a wider mask has room.
"""

from __future__ import annotations

from typing import ClassVar

from fakenrt.scheduler.alignment import Choice, walk_units
from fakenrt.scheduler.choice import choose_mask
from fakenrt.scheduler.evaluator import Evaluation
from fakenrt.scheduler.hints import ResourceHints
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.requests import AlignmentUnit
from fakenrt.scheduler.topology import POLICY_RESTRICTED


class RestrictedEvaluator:
    """``prefer_closest``: the kubelet runs with ``prefer-closest-numa-nodes`` (NRT does not
    say; the ``preferClosestNUMANodes`` plugin argument does), so equally narrow masks are
    ranked by NUMA distance (NRT ``costs``)."""

    policy: ClassVar[str] = POLICY_RESTRICTED

    def __init__(self, *, prefer_closest: bool = False) -> None:
        self.prefer_closest = prefer_closest

    def evaluate(self, ledger: ZoneLedger, units: tuple[AlignmentUnit, ...]) -> Evaluation:
        distance = ledger.topology.mask_distances.__getitem__ if self.prefer_closest else None

        def choose(unit: AlignmentUnit, hints: list[ResourceHints]) -> Choice:
            return choose_mask(self.policy, unit, hints, single_node=False, distance=distance)

        return walk_units(ledger, units, choose)
