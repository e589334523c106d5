"""Rebuild a node's per-zone free capacity from the pods on it (seed 000, Appendix A). Pure.

``available[zone] = allocatable[zone] - sum(placement[zone])`` over the node's pods, each
placement taken from the pod's observed annotation, else its predicted one, else nothing.
NRT ``available`` is never read here, so exporter lag cannot make it stale in either
direction. Terminal pods (``Succeeded`` / ``Failed``) hold nothing.

A pod with neither annotation is not guessed: it is left out, so the zones it really uses
look free until the exporter reports it (a transient over-report on those zones; the
kubelet stays the backstop). :func:`reconstruct` reports such pods in ``unplaced``.

Memory Manager groups are rebuilt too: single-NUMA memory of the observed placement is a
one-node block; each entry of ``numa-memory-groups-observed`` over several nodes is a
group (its bytes spread over its zones lowest id first, as the Memory Manager fills them);
a predicted placement with memory in several zones is one group in pod scope, and
one-node blocks per zone in container scope (the annotation cannot tell containers apart).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    PREDICTED_PLACEMENT,
    AnnotationFormatError,
    parse_memory_groups,
    parse_placement,
)
from fakenrt.podspec import TERMINAL_PHASES, PodSpec, PodSpecError, pod_from_manifest
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import Placement, is_memory_type, merge_amounts
from fakenrt.scheduler.topology import SCOPE_POD, NumaTopology


class ReconstructionError(ValueError):
    """A pod's placement annotation that cannot be used; the message names pod and field."""


@dataclass(frozen=True)
class NodePod:
    """A pod bound to the node, as reconstruction needs it."""

    spec: PodSpec
    phase: str = "Pending"

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES


def node_pod_from_manifest(manifest: Mapping[str, Any], *, source: str = "pod") -> NodePod:
    """Read a Pod manifest (with ``status.phase`` when it has one)."""
    spec = pod_from_manifest(manifest, source=source)
    status = manifest.get("status") or {}
    if not isinstance(status, Mapping):
        raise PodSpecError(f"{source}: pod {spec.key}: status must be a mapping")
    phase = status.get("phase") or "Pending"
    if not isinstance(phase, str):
        raise PodSpecError(f"{source}: pod {spec.key}: status.phase must be a string")
    return NodePod(spec=spec, phase=phase)


@dataclass(frozen=True)
class Reconstruction:
    ledger: ZoneLedger
    #: pod key -> "observed" / "predicted" (pods with a placement).
    sources: Mapping[str, str] = field(default_factory=dict)
    #: Non-terminal pods with no placement annotation (not guessed).
    unplaced: tuple[str, ...] = ()
    #: Annotations that could not be used (only when not strict).
    problems: tuple[str, ...] = ()


def _check_zones(placement: Placement, topology: NumaTopology, where: str) -> None:
    known = set(topology.zone_ids)
    for z in placement.amounts:
        if z not in known:
            raise ReconstructionError(
                f"{where}: zone node-{z} is not a NUMA zone of {topology.node}"
            )


def _single_blocks(amounts: Mapping[int, Mapping[str, int]]) -> list[frozenset[int]]:
    return [
        frozenset((z,))
        for z, a in sorted(amounts.items())
        for t, v in sorted(a.items())
        if is_memory_type(t) and v > 0
    ]


def _zone_amounts(value: str, where: str) -> dict[int, dict[str, int]]:
    """Zone id -> resource -> amount from a placement annotation's value."""
    try:
        zones = parse_placement(value)
    except AnnotationFormatError as exc:
        raise ReconstructionError(f"{where}: {exc}") from exc
    amounts: dict[int, dict[str, int]] = {}
    for zp in zones:
        for name, amount in zp.amounts.items():
            merge_amounts(amounts, zp.numa_id, name, amount)
    return amounts


def _observed(
    pod: PodSpec, topology: NumaTopology, free: Mapping[int, Mapping[str, int]]
) -> Placement:
    where = f"pod {pod.key}: annotation {OBSERVED_PLACEMENT}"
    # No placement annotation next to a memory-groups one: the exporter saw the pod and it
    # holds nothing per zone (multi-zone memory, if any, is in the groups).
    amounts = _zone_amounts(pod.annotations.get(OBSERVED_PLACEMENT, "[]"), where)
    blocks = _single_blocks(amounts)
    raw_groups = pod.annotations.get(OBSERVED_MEMORY_GROUPS)
    if raw_groups is not None:
        gwhere = f"pod {pod.key}: annotation {OBSERVED_MEMORY_GROUPS}"
        try:
            groups = parse_memory_groups(raw_groups)
        except AnnotationFormatError as exc:
            raise ReconstructionError(f"{gwhere}: {exc}") from exc
        for group in groups or ():
            if len(group.numa_ids) < 2:
                continue  # single-NUMA blocks are already in the placement
            ids = sorted(group.numa_ids)
            for z in ids:
                if z not in free:
                    raise ReconstructionError(
                        f"{gwhere}: zone node-{z} is not a NUMA zone of {topology.node}"
                    )
            for mtype, size in sorted(group.amounts.items()):
                left = size
                for z in ids:
                    room = free[z].get(mtype, 0) - amounts.get(z, {}).get(mtype, 0)
                    take = left if z == ids[-1] else min(max(room, 0), left)
                    merge_amounts(amounts, z, mtype, take)
                    left -= take
                blocks.append(frozenset(ids))
    placement = Placement(amounts=amounts, memory_blocks=tuple(blocks))
    _check_zones(placement, topology, where)
    return placement


def _predicted(pod: PodSpec, topology: NumaTopology) -> Placement:
    where = f"pod {pod.key}: annotation {PREDICTED_PLACEMENT}"
    amounts = _zone_amounts(pod.annotations[PREDICTED_PLACEMENT], where)
    memory_zones = sorted(
        z for z, a in amounts.items() if any(is_memory_type(t) and v > 0 for t, v in a.items())
    )
    if topology.scope == SCOPE_POD and len(memory_zones) > 1:
        types = sorted({t for z in memory_zones for t in amounts[z] if is_memory_type(t)})
        blocks = [frozenset(memory_zones) for _ in types]
    else:
        blocks = _single_blocks(amounts)
    placement = Placement(amounts=amounts, memory_blocks=tuple(blocks))
    _check_zones(placement, topology, where)
    return placement


def _sources(
    pod: PodSpec, topology: NumaTopology, free: Mapping[int, Mapping[str, int]]
) -> list[tuple[str, Callable[[], Placement]]]:
    """The pod's placement sources, best first: observed, then predicted.

    The exporter has observed a pod when it wrote its placement annotation, or a complete
    memory-groups annotation (a pod with nothing aligned per zone gets only that one; the
    groups value ``null`` means an incomplete observation, which does not count)."""
    out: list[tuple[str, Callable[[], Placement]]] = []
    groups = pod.annotations.get(OBSERVED_MEMORY_GROUPS)
    if OBSERVED_PLACEMENT in pod.annotations or (groups is not None and groups.strip() != "null"):
        out.append(("observed", lambda: _observed(pod, topology, free)))
    if PREDICTED_PLACEMENT in pod.annotations:
        out.append(("predicted", lambda: _predicted(pod, topology)))
    return out


def reconstruct(
    topology: NumaTopology, pods: Iterable[NodePod], *, strict: bool = True
) -> Reconstruction:
    """A ledger of ``allocatable - placements``. With ``strict`` an unusable annotation
    raises :class:`ReconstructionError`; otherwise that pod falls back to its next source
    (observed -> predicted -> unplaced) and the problem is reported."""
    ledger = ZoneLedger(topology, {z.id: z.allocatable for z in topology.zones})
    sources: dict[str, str] = {}
    unplaced: list[str] = []
    problems: list[str] = []
    for pod in pods:
        if pod.terminal:
            continue
        for source, read in _sources(pod.spec, topology, ledger.available):
            try:
                placement = read()
            except ReconstructionError as exc:
                if strict:
                    raise
                problems.append(str(exc))
                continue
            sources[pod.spec.key] = source
            ledger.charge(placement)
            break
        else:
            unplaced.append(pod.spec.key)
    return Reconstruction(
        ledger=ledger, sources=sources, unplaced=tuple(unplaced), problems=tuple(problems)
    )
