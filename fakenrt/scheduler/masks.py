"""NUMA masks as ints (bit ``i`` set = NUMA node ``i``), in the kubelet's narrowness order.

Pure. The kubelet's ``bitmask`` package orders masks by the number of bits set, then by
numeric value ("more lower-numbered bits set wins": ``IsNarrowerThan`` / ``IsLessThan`` in
``pkg/kubelet/cm/topologymanager/bitmask/bitmask.go``); :func:`narrowness` is that key.
Plain ints because the plugin runs for every (pod, node) pair; the iteration order comes
from the simulator's :mod:`fakenrt.kubelet.bitmask` (the kubelet's own value type), so
both sides visit masks identically.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from fakenrt.kubelet.bitmask import iterate_masks


def mask_of(ids: Iterable[int]) -> int:
    """The mask with the given NUMA ids set."""
    mask = 0
    for i in ids:
        mask |= 1 << i
    return mask


@lru_cache(maxsize=4096)
def bits(mask: int) -> tuple[int, ...]:
    """The NUMA ids set in ``mask``, ascending."""
    out: list[int] = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return tuple(out)


def narrowness(mask: int) -> tuple[int, int]:
    """Sort key: narrower (fewer bits) first, then numerically lower (lower ids) first."""
    return (mask.bit_count(), mask)


def all_masks(ids: Iterable[int]) -> tuple[int, ...]:
    """Every non-empty mask over ``ids``, narrowest first and, within a width, in the
    kubelet's ``IterateBitMasks`` order (combinations of the sorted ids)."""
    return _all_masks(tuple(sorted(set(ids))))


@lru_cache(maxsize=256)
def _all_masks(ordered: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(m.value for m in iterate_masks(ordered))


def subset_sums(ids: tuple[int, ...], values: dict[int, int]) -> dict[int, int]:
    """For every non-empty mask over ``ids``: the sum of ``values`` over its bits.

    Dynamic programming on the lowest set bit keeps this linear in the number of masks.
    """
    sums: dict[int, int] = {0: 0}
    for i in ids:
        bit = 1 << i
        for mask, total in list(sums.items()):
            sums[mask | bit] = total + values.get(i, 0)
    del sums[0]
    return sums
