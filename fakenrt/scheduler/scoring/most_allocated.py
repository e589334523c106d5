"""MostAllocated: prefer placements whose zones are fullest (bin-packing, so whole zones
stay free for later wide pods).

Score = mean over the charged resources of the used fraction of the placement zones after
the pod, x 100. A pod with nothing aligned scores 0 on every node (neutral).
"""

from __future__ import annotations

from fractions import Fraction

from fakenrt.scheduler.scoring.base import MIN_SCORE, ScoreInput, to_score, utilisations


def most_allocated(inp: ScoreInput) -> int:
    used = utilisations(inp)
    if not used:
        return MIN_SCORE
    return to_score(sum(used, Fraction(0)) / len(used))
