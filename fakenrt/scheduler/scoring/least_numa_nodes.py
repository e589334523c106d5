"""LeastNUMANodes (seed 001): prefer nodes where the pod needs the fewest NUMA zones, and
zones close to each other.

Per admission step (each container in container scope, the pod in pod scope), in order:
for width 1, 2, ... take the combinations of zones of that width (lowest ids first); the
step needs the first width where some combination has every aligned resource available;
among the fitting combinations of that width it takes the one with the lowest average
distance (mean of the NRT ``costs`` over all ordered pairs of its zones, self included;
within one width the mean orders combinations as their sum does, so the sum is compared),
and notes whether that average is the minimum over *all* combinations of the width. The
step's resources are then taken from that combination (lowest zone first) before the next
step looks. With ``n`` the largest width any step needed and ``close`` true iff every step
got a minimum-distance combination::

    score = 100 - n * (100 // 8) + (100 // 8) // 2  if close  else  100 - n * (100 // 8)

(``8`` is upstream's highest NUMA id constant.) A pod that aligns nothing needs 0 zones
and scores 100; a step that fits no combination scores the node 0.
"""

from __future__ import annotations

from fakenrt.scheduler.masks import subset_sums
from fakenrt.scheduler.scoring.base import MAX_SCORE, MIN_SCORE, ScoreInput

HIGHEST_NUMA_ID = 8


def normalize(numa_nodes: int, close: bool) -> int:
    numa_score = MAX_SCORE // HIGHEST_NUMA_ID
    score = MAX_SCORE - numa_nodes * numa_score + (numa_score // 2 if close else 0)
    return max(MIN_SCORE, min(MAX_SCORE, score))


def best_score() -> int:
    """The highest score of a pod that aligns anything: one zone, the closest. (Only a pod
    that aligns nothing scores more: 100.)"""
    return normalize(1, True)


def least_numa_nodes(inp: ScoreInput) -> int:
    topology = inp.ledger.topology
    ids = topology.zone_ids
    steps = [u.amounts() for u in inp.units if not u.empty]
    if not steps:
        return MAX_SCORE
    by_width = topology.combinations
    least = {w: min(row[2] for row in rows) for w, rows in by_width.items()}
    free = {z: dict(inp.ledger.available[z]) for z in ids}
    widest = 0
    close = True
    for request in steps:
        sums = {r: subset_sums(ids, {z: max(free[z].get(r, 0), 0) for z in ids}) for r in request}
        found: tuple[int, tuple[int, ...], bool] | None = None
        for width in range(1, len(ids) + 1):
            best: tuple[tuple[int, ...], int] | None = None
            for combo, mask, total in by_width[width]:
                if all(sums[r][mask] >= amount for r, amount in request.items()) and (
                    best is None or total < best[1]
                ):
                    best = (combo, total)
            if best is not None:
                found = (width, best[0], best[1] == least[width])
                break
        if found is None:
            return MIN_SCORE
        width, combo, is_close = found
        widest = max(widest, width)
        close = close and is_close
        for resource, amount in request.items():
            left = amount
            for z in combo:
                take = min(max(free[z].get(resource, 0), 0), left)
                free[z][resource] = free[z].get(resource, 0) - take
                left -= take
    return normalize(widest, close)
