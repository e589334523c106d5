"""LeastAllocated: prefer placements whose zones stay emptiest (spreading).

Score = mean over the charged resources of the free fraction of the placement zones
after the pod, x 100. A pod with nothing aligned scores 0 on every node (neutral).
"""

from __future__ import annotations

from fractions import Fraction

from fakenrt.scheduler.scoring.base import MIN_SCORE, ScoreInput, to_score, utilisations


def least_allocated(inp: ScoreInput) -> int:
    used = utilisations(inp)
    if not used:
        return MIN_SCORE
    return to_score(sum((1 - u for u in used), Fraction(0)) / len(used))
