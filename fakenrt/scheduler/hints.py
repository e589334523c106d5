"""Topology hints of the kubelet's three hint providers, computed from per-zone numbers.

Pure. Every provider runs the same two passes over every NUMA mask:

1. preferred width - the fewest NUMA nodes whose *capacity* covers the request: for
   ``cpu`` all CPUs of the zones, reserved ones included (``CPUsInNUMANodes`` in
   ``cpumanager/policy_static.go``: NRT ``capacity``); for devices every device, unhealthy
   ones included (``m.allDevices`` in ``devicemanager/topology_hints.go``: NRT
   ``capacity``); for memory the zones' *allocatable* bytes of every requested memory type
   (``calculateHints`` in ``memorymanager/policy_static.go``: NRT ``allocatable``);
2. feasibility - the mask's *available* amount (plus what the pod's init containers left
   to reuse) covers the request.

A feasible mask is preferred iff its width equals the preferred width. An empty hint list
means the provider cannot satisfy the request (the kubelet rejects under restricted and
single-numa-node). Provider-specific rules kept here:

* CPUs / devices an earlier init container of the same pod holds and a later container
  may reuse must all lie inside a mask for it to be feasible;
* the Memory Manager sizes ``memory`` and all ``hugepages-*`` together (one hint list for
  every memory type), counts the preferred width only over masks with enough allocatable
  of every type, and honours its groups: a NUMA node in a multi-node group cannot serve a
  single-node block, and a mask over nodes already used must be exactly their group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.masks import all_masks, mask_of, subset_sums


@dataclass(frozen=True)
class ResourceHints:
    """One provider resource's hints: the preferred width, the preferred masks (feasible
    masks of that width), whether any mask at all is feasible, and - for the Memory
    Manager, whose feasibility is not monotone in the mask - every feasible mask."""

    resource: str
    request: int
    min_width: int
    preferred: tuple[int, ...]
    any_feasible: bool
    feasible: tuple[int, ...] = ()


def _counting_hints(
    resource: str,
    *,
    ids: tuple[int, ...],
    capacity: Mapping[int, int],
    available: Mapping[int, int],
    reusable: Mapping[int, int],
    request: int,
) -> ResourceHints:
    masks = all_masks(ids)
    cap_sums = subset_sums(ids, dict(capacity))
    # Masks come narrowest first: the first one whose capacity covers the request sets the
    # preferred width (every zone when none does, as the kubelet initialises it).
    min_width = len(ids)
    for mask in masks:
        if cap_sums[mask] >= request:
            min_width = mask.bit_count()
            break
    free_sums = subset_sums(ids, {z: max(v, 0) for z, v in available.items()})
    reuse_total = sum(reusable.values())
    must_include = mask_of(z for z, v in reusable.items() if v > 0)
    preferred = tuple(
        m
        for m in masks
        if m.bit_count() == min_width
        and m & must_include == must_include
        and free_sums[m] + reuse_total >= request
    )
    # More zones never hold less, so some mask is feasible iff the widest one is.
    widest = mask_of(ids)
    any_feasible = bool(ids) and (
        widest & must_include == must_include and free_sums[widest] + reuse_total >= request
    )
    return ResourceHints(resource, request, min_width, preferred, any_feasible)


def cpu_hints(ledger: ZoneLedger, request: int, reusable: Mapping[int, int]) -> ResourceHints:
    """The static CPU Manager's hints. Only NUMA nodes with CPUs take part."""
    topo = ledger.topology
    ids = tuple(z.id for z in topo.zones if z.capacity.get("cpu", 0) > 0)
    capacity = {z.id: z.capacity.get("cpu", 0) for z in topo.zones}
    available = {z: ledger.free(z, "cpu") for z in ids}
    return _counting_hints(
        "cpu", ids=ids, capacity=capacity, available=available, reusable=reusable, request=request
    )


def device_hints(
    ledger: ZoneLedger, resource: str, request: int, reusable: Mapping[int, int]
) -> ResourceHints:
    """The Device Manager's hints for one device resource (devices with one NUMA node each,
    as NRT reports them per zone)."""
    topo = ledger.topology
    ids = topo.zone_ids
    capacity = {z.id: z.capacity.get(resource, 0) for z in topo.zones}
    available = {z: ledger.free(z, resource) for z in ids}
    return _counting_hints(
        resource,
        ids=ids,
        capacity=capacity,
        available=available,
        reusable=reusable,
        request=request,
    )


def memory_label(request: Mapping[str, int]) -> str:
    return "+".join(sorted(request))


def memory_hints(
    ledger: ZoneLedger,
    request: Mapping[str, int],
    reusable: Mapping[int, Mapping[str, int]],
    *,
    full: bool = False,
) -> ResourceHints:
    """The static Memory Manager's hints: one list for every requested memory type.

    ``reusable`` maps a mask to what the pod's init containers hold under exactly that
    mask (``getPodReusableMemory``). ``feasible`` lists every feasible mask only with
    ``full`` (the allocation's hint extension needs them); otherwise the scan stops as soon
    as the preferred masks and whether any mask is feasible are known.
    """
    topo = ledger.topology
    ids = topo.zone_ids
    alloc_sums = {
        t: subset_sums(ids, {z.id: z.allocatable.get(t, 0) for z in topo.zones}) for t in request
    }
    free_sums = {t: subset_sums(ids, {z: max(ledger.free(z, t), 0) for z in ids}) for t in request}
    cells = ledger.cells
    # Zones that hold memory blocks (group rules apply to masks touching them) and zones
    # in a multi-node group (they cannot serve a one-node block).
    busy = mask_of(z for z in ids if ledger.blocks[z])
    grouped = mask_of(z for z in ids if len(cells[z]) > 1)
    kinds = [(alloc_sums[t], free_sums[t], t, size) for t, size in request.items()]

    def feasible_mask(mask: int) -> bool:
        if mask.bit_count() == 1:
            if mask & grouped:
                return False
        elif mask & busy and ledger.breaks_group(mask):
            return False
        reuse = reusable.get(mask)
        if reuse:
            return all(free[mask] + reuse.get(t, 0) >= size for _, free, t, size in kinds)
        return all(free[mask] >= size for _, free, _, size in kinds)

    # Masks come narrowest first, so the first one with enough allocatable of every type
    # sets the preferred width (every zone when none has).
    candidates = [m for m in all_masks(ids) if all(alloc[m] >= size for alloc, _, _, size in kinds)]
    min_width = candidates[0].bit_count() if candidates else len(ids)
    total = sum(request.values())
    if full:
        feasible = tuple(m for m in candidates if feasible_mask(m))
        preferred = tuple(m for m in feasible if m.bit_count() == min_width)
        return ResourceHints(
            memory_label(request), total, min_width, preferred, bool(feasible), feasible
        )
    preferred = tuple(m for m in candidates if m.bit_count() == min_width and feasible_mask(m))
    any_feasible = bool(preferred) or any(
        feasible_mask(m) for m in candidates if m.bit_count() != min_width
    )
    return ResourceHints(memory_label(request), total, min_width, preferred, any_feasible)
