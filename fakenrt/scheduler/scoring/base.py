"""What every scoring strategy reads, and the per-resource utilisation of a placement."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import Placement
from fakenrt.scheduler.requests import AlignmentUnit

MAX_SCORE = 100
MIN_SCORE = 0


@dataclass(frozen=True)
class ScoreInput:
    """``ledger``: the node's free amounts before the pod. ``units``: the pod's admission
    steps on this node. ``placement``: what the pod would be charged (its aligned
    placement)."""

    ledger: ZoneLedger
    units: tuple[AlignmentUnit, ...]
    placement: Placement


def utilisations(inp: ScoreInput) -> list[Fraction]:
    """Per charged resource: the fraction of the placement zones' allocatable that would be
    in use with the pod placed (capped at 1)."""
    zones = inp.placement.zones
    out: list[Fraction] = []
    names = sorted({r for z in zones for r in inp.placement.amounts[z]})
    for resource in names:
        allocatable = 0
        used = 0
        for z in zones:
            zone_alloc = inp.ledger.topology.zone(z).allocatable.get(resource, 0)
            allocatable += zone_alloc
            used += zone_alloc - inp.ledger.free(z, resource)
        if allocatable <= 0:
            continue
        used += inp.placement.total(resource)
        out.append(min(Fraction(max(used, 0), allocatable), Fraction(1)))
    return out


def to_score(value: Fraction) -> int:
    """A fraction in [0, 1] as a 0..100 score, rounded down."""
    return max(MIN_SCORE, min(MAX_SCORE, int(value * MAX_SCORE)))
