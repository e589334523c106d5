"""Node scoring strategies, one per module, each a pure function of a :class:`ScoreInput`
returning an int in 0..100. Scores only rank nodes the filter already accepted; they never
change its verdict."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fakenrt.scheduler.scoring.balanced_allocation import balanced_allocation
from fakenrt.scheduler.scoring.base import MAX_SCORE, MIN_SCORE, ScoreInput
from fakenrt.scheduler.scoring.least_allocated import least_allocated
from fakenrt.scheduler.scoring.least_numa_nodes import least_numa_nodes
from fakenrt.scheduler.scoring.most_allocated import most_allocated

Strategy = Callable[[ScoreInput], int]

LEAST_NUMA_NODES = "LeastNUMANodes"

STRATEGIES: Mapping[str, Strategy] = {
    LEAST_NUMA_NODES: least_numa_nodes,
    "MostAllocated": most_allocated,
    "LeastAllocated": least_allocated,
    "BalancedAllocation": balanced_allocation,
}


def strategy(name: str) -> Strategy:
    """The strategy called ``name``; ValueError naming the known ones otherwise."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown scoring strategy {name!r}; known: {', '.join(STRATEGIES)}"
        ) from None


__all__ = [
    "LEAST_NUMA_NODES",
    "MAX_SCORE",
    "MIN_SCORE",
    "STRATEGIES",
    "ScoreInput",
    "Strategy",
    "strategy",
]
