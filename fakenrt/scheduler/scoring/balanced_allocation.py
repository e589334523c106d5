"""BalancedAllocation: prefer placements that keep the charged resources equally used in
their zones (no zone left with free GPUs but no free CPUs).

Score = (1 - population standard deviation of the per-resource used fractions) x 100, as
the upstream NodeResourcesBalancedAllocation does for whole nodes. One resource scores 100;
a pod with nothing aligned scores 0 on every node (neutral).
"""

from __future__ import annotations

import math
from fractions import Fraction

from fakenrt.scheduler.scoring.base import MAX_SCORE, MIN_SCORE, ScoreInput, utilisations


def balanced_allocation(inp: ScoreInput) -> int:
    used = utilisations(inp)
    if not used:
        return MIN_SCORE
    mean = sum(used, Fraction(0)) / len(used)
    variance = sum(((u - mean) ** 2 for u in used), Fraction(0)) / len(used)
    std = math.sqrt(variance)
    return max(MIN_SCORE, min(MAX_SCORE, int((1 - std) * MAX_SCORE + 1e-9)))
