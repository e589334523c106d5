"""Rebuild a node's per-zone free capacity from the pods on it (seed 000, Appendix A). Pure.

``available[zone] = allocatable[zone] - sum(placement[zone])`` over the node's pods, each
placement taken from the pod's observed annotation, else its predicted one, else nothing.
NRT ``available`` is never read here, so exporter lag cannot make it stale in either
direction. Terminal pods (``Succeeded`` / ``Failed``) hold nothing.

A pod with neither annotation is not guessed: it is left out, so the zones it really uses
look free until the exporter reports it. :func:`reconstruct` reports such pods in
``unplaced``, and those of them that hold exclusive resources in ``unaccounted``.

Memory Manager groups are rebuilt too, by the same rule from the observed pair
(``numa-placement-observed`` / ``numa-memory-groups-observed``) and the predicted pair
(``numa-placement-predicted`` / ``numa-memory-groups-predicted``): single-NUMA memory of
the placement is a one-node block; each entry of the groups annotation over several nodes
is a group (its bytes spread over its zones lowest id first, as the Memory Manager fills
them).

**NRT when it is exact.** Capacity held outside the scheduler's view (pods without any
annotation, a node's own consumers) is invisible to ``allocatable - placements``. The NRT
pod fingerprint (``nodeTopologyPodsFingerprint``) says when NRT ``available`` reflects
exactly the pods the scheduler sees on the node - the scheduler-plugins NRT cache uses it
the same way: computed over the same set (every non-terminal pod for method ``all``, those
holding exclusive resources for ``with-exclusive-resources``; terminal pods are tried both
left out and counted, as exporters differ), a match means NRT is current, and its
``available`` is taken as it is - what the visible pods hold plus whatever NRT holds beyond
them - with the memory groups still rebuilt from the annotations. Otherwise the ledger is
``allocatable - placements`` and :attr:`Reconstruction.unaccounted` names the pods that
hold exclusive resources at zones nobody reported: the plugin defers NUMA-sensitive pods
on such a node (seed 000, Appendix A caveats) until the exporter reports them or NRT
catches up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    PREDICTED_MEMORY_GROUPS,
    PREDICTED_PLACEMENT,
    AnnotationFormatError,
    MemoryGroup,
    parse_memory_groups,
    parse_placement,
)
from fakenrt.nrt.fingerprint import METHOD_ALL, METHOD_WITH_EXCLUSIVE_RESOURCES, fingerprint
from fakenrt.podspec import (
    TERMINAL_PHASES,
    ContainerSpec,
    PodSpec,
    PodSpecError,
    QOSClass,
    pod_from_manifest,
    qos_class,
)
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import Placement, is_memory_type, merge_amounts
from fakenrt.scheduler.requests import is_device_resource
from fakenrt.scheduler.topology import (
    CPU_MANAGER_STATIC,
    MEMORY_MANAGER_STATIC,
    NumaTopology,
)


class ReconstructionError(ValueError):
    """A pod's placement annotation that cannot be used; the message names pod and field."""


@dataclass(frozen=True)
class NodePod:
    """A pod bound to the node, as reconstruction needs it. ``requests``: the pod's
    effective requests (:func:`fakenrt.podspec.effective_requests`) when the caller
    already has them."""

    spec: PodSpec
    phase: str = "Pending"
    requests: Mapping[str, Decimal] | None = None

    @cached_property
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
    #: Pods that hold exclusive resources at zones nobody reported - unplaced ones, and
    #: observed ones whose regular init containers keep some (:func:`kept_by_init`); empty
    #: when NRT is exact.
    unaccounted: tuple[str, ...] = ()
    #: The NRT fingerprint matched the node's pods: the ledger is NRT ``available``.
    nrt_exact: bool = False


def _exclusive_amounts(
    pod: PodSpec, container: ContainerSpec, topology: NumaTopology
) -> dict[str, Decimal]:
    """What the kubelet's managers give ``container`` exclusively, by resource: devices
    some zone reports; for a Guaranteed pod, a whole CPU request (static CPU Manager) and
    memory / hugepages (static Memory Manager; a manager the NRT does not name counts as
    static, as in :func:`holds_exclusive`)."""
    out = {
        r: v
        for r, v in container.limits.items()
        if is_device_resource(r) and v > 0 and r in topology.reported
    }
    if qos_class(pod) != QOSClass.GUARANTEED:
        return out
    cpu = container.requests.get("cpu")
    if (
        topology.cpu_manager_policy in (None, CPU_MANAGER_STATIC)
        and cpu is not None
        and cpu > 0
        and cpu == cpu.to_integral_value()
    ):
        out["cpu"] = cpu
    if topology.memory_manager_policy in (None, MEMORY_MANAGER_STATIC):
        out.update((r, v) for r, v in container.requests.items() if is_memory_type(r) and v > 0)
    return out


def kept_by_init(pod: PodSpec, topology: NumaTopology) -> bool:
    """Whether a regular init container of ``pod`` keeps exclusive resources that no later
    container takes over. The kubelet's managers hand what a regular init container held to
    the containers after it (``cpusToReuse`` in ``cpumanager/policy_static.go``,
    ``devicesToReuse`` in ``devicemanager/manager.go``, the reusable memory of
    ``memorymanager/policy_static.go``); what they do not take stays with the pod, and the
    podresources API does not list regular init containers - so no observed annotation
    reports it and its zones are unknown. Counted per resource in start order: a regular
    init container leaves the larger of what is reusable and what it holds, a later
    sidecar or app container takes its own amount out of it."""
    if not pod.init_containers:
        return False
    reusable: dict[str, Decimal] = {}
    for container in (*pod.init_containers, *pod.containers):
        amounts = _exclusive_amounts(pod, container, topology)
        regular_init = container in pod.init_containers and not container.restartable
        for resource, amount in amounts.items():
            held = reusable.get(resource, Decimal(0))
            reusable[resource] = (
                max(held, amount) if regular_init else max(Decimal(0), held - amount)
            )
    return any(v > 0 for v in reusable.values())


def holds_exclusive(pod: PodSpec, topology: NumaTopology, *, zoned: bool = False) -> bool:
    """Whether the kubelet gives ``pod`` exclusive resources on the node - the pods the
    ``with-exclusive-resources`` fingerprint covers: device-plugin resources (any QoS);
    for Guaranteed pods, CPUs of a container with a whole CPU request (static CPU Manager)
    and memory (static Memory Manager). A manager the NRT does not name is assumed static,
    as the filter assumes. ``zoned``: only devices some zone reports count (a device
    without NUMA affinity is held at no zone)."""
    containers = (*pod.init_containers, *pod.containers)
    if any(
        is_device_resource(r) and v > 0 and (not zoned or r in topology.reported)
        for c in containers
        for r, v in c.limits.items()
    ):
        return True
    if qos_class(pod) != QOSClass.GUARANTEED:
        return False
    if topology.memory_manager_policy in (None, MEMORY_MANAGER_STATIC):
        return True
    if topology.cpu_manager_policy in (None, CPU_MANAGER_STATIC):
        return any(
            (cpu := c.requests.get("cpu")) is not None
            and cpu > 0
            and cpu == cpu.to_integral_value()
            for c in containers
        )
    return False


def _counted(
    topology: NumaTopology, pods: Sequence[NodePod], parts: Mapping[str, _Part]
) -> list[NodePod] | None:
    """The pods a fingerprint by the NRT's method covers (None: a method not known);
    ``parts``: what is known of them (:func:`placements`)."""
    method = topology.fingerprint_method or METHOD_ALL
    if method == METHOD_WITH_EXCLUSIVE_RESOURCES:
        return [p for p in pods if _exclusive(p, topology, parts)]
    if method == METHOD_ALL:
        return list(pods)
    return None


def _exclusive(pod: NodePod, topology: NumaTopology, parts: Mapping[str, _Part]) -> bool:
    part = parts.get(pod.spec.key)
    if part is not None and part.pod is pod:
        return part.exclusive
    return holds_exclusive(pod.spec, topology)


def _fingerprints(
    topology: NumaTopology, pods: Sequence[NodePod], parts: Mapping[str, _Part] | None = None
) -> tuple[str, str] | None:
    """The fingerprints of the pods the NRT's method covers: without the terminal ones,
    and with them (None: a method not known)."""
    counted = _counted(topology, pods, parts or {})
    if counted is None:
        return None
    live = [(p.spec.namespace, p.spec.name) for p in counted if not p.terminal]
    without = fingerprint(live)
    if len(live) == len(counted):
        return without, without
    return without, fingerprint([(p.spec.namespace, p.spec.name) for p in counted])


def nrt_matches(topology: NumaTopology, pods: Iterable[NodePod]) -> bool:
    """NRT ``available`` reflects exactly ``pods`` (the pods the scheduler sees bound to the
    node): its published fingerprint equals theirs, computed by the published method
    (``all`` when none is published). Terminal pods are tried left out and counted."""
    if topology.fingerprint is None:
        return False
    prints = _fingerprints(topology, list(pods))
    return prints is not None and topology.fingerprint in prints


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


#: Parsed annotation values, by value: the same few values recur on many pods and in
#: every rebuild of a node's books (a scheduler reads them every cycle).
_PARSED_LIMIT = 1 << 16
_parsed_amounts: dict[str, dict[int, dict[str, int]]] = {}
_parsed_groups: dict[str, tuple[MemoryGroup, ...] | None] = {}
#: Placements without a multi-zone group, by (placement value, groups value, zone ids).
_single_zone_placements: dict[tuple[str, str | None, tuple[int, ...]], Placement] = {}


def _zone_amounts(value: str, where: str) -> dict[int, dict[str, int]]:
    """Zone id -> resource -> amount from a placement annotation's value (a fresh table
    the caller may change)."""
    known = _parsed_amounts.get(value)
    if known is None:
        try:
            zones = parse_placement(value)
        except AnnotationFormatError as exc:
            raise ReconstructionError(f"{where}: {exc}") from exc
        known = {}
        for zp in zones:
            for name, amount in zp.amounts.items():
                merge_amounts(known, zp.numa_id, name, amount)
        if len(_parsed_amounts) >= _PARSED_LIMIT:
            _parsed_amounts.clear()
        _parsed_amounts[value] = known
    return {zone: dict(amounts) for zone, amounts in known.items()}


def _memory_groups(value: str, where: str) -> tuple[MemoryGroup, ...] | None:
    """The groups of a memory-groups annotation's value (None: ``null``)."""
    if value in _parsed_groups:
        return _parsed_groups[value]
    try:
        groups = parse_memory_groups(value)
    except AnnotationFormatError as exc:
        raise ReconstructionError(f"{where}: {exc}") from exc
    if len(_parsed_groups) >= _PARSED_LIMIT:
        _parsed_groups.clear()
    _parsed_groups[value] = groups
    return groups


def _annotated(
    pod: PodSpec,
    topology: NumaTopology,
    free: Mapping[int, Mapping[str, int]],
    *,
    placement_key: str,
    groups_key: str,
) -> Placement:
    """A placement from a pair of annotations (observed or predicted, the same rule): the
    per-zone amounts (memory there is single-NUMA blocks) and the memory groups, each group
    over several nodes spread over its zones lowest id first, as the Memory Manager fills
    them. Without a group over several zones the placement depends on the two values and
    the zones only, and is taken from the ones already read."""
    value = pod.annotations.get(placement_key, "[]")
    raw_groups = pod.annotations.get(groups_key)
    known = (value, raw_groups, topology.zone_ids)
    cached = _single_zone_placements.get(known)
    if cached is not None:
        return cached
    where = f"pod {pod.key}: annotation {placement_key}"
    # No placement annotation next to a memory-groups one: the pod holds nothing per zone
    # (multi-zone memory, if any, is in the groups).
    amounts = _zone_amounts(value, where)
    blocks = _single_blocks(amounts)
    spread = False
    if raw_groups is not None:
        gwhere = f"pod {pod.key}: annotation {groups_key}"
        for group in _memory_groups(raw_groups, gwhere) or ():
            if len(group.numa_ids) < 2:
                continue  # single-NUMA blocks are already in the placement
            spread = True
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
    if not spread:
        if len(_single_zone_placements) >= _PARSED_LIMIT:
            _single_zone_placements.clear()
        _single_zone_placements[known] = placement
    return placement


def _observed(
    pod: PodSpec, topology: NumaTopology, free: Mapping[int, Mapping[str, int]]
) -> Placement:
    return _annotated(
        pod,
        topology,
        free,
        placement_key=OBSERVED_PLACEMENT,
        groups_key=OBSERVED_MEMORY_GROUPS,
    )


def _predicted(
    pod: PodSpec, topology: NumaTopology, free: Mapping[int, Mapping[str, int]]
) -> Placement:
    """The scheduler's prediction, written by the observed rule. Without the predicted
    groups annotation (a scheduler that writes only the KAI placement) the per-zone memory
    is taken as one-zone blocks, which is what that annotation's format says."""
    return _annotated(
        pod,
        topology,
        free,
        placement_key=PREDICTED_PLACEMENT,
        groups_key=PREDICTED_MEMORY_GROUPS,
    )


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
    if PREDICTED_PLACEMENT in pod.annotations or PREDICTED_MEMORY_GROUPS in pod.annotations:
        out.append(("predicted", lambda: _predicted(pod, topology, free)))
    return out


@dataclass(frozen=True, eq=False)
class _Part:
    """What one non-terminal pod gives its node's reconstruction, when that depends on the
    pod and the NRT's static part only - its placement has no memory group over several
    zones (those are spread by what earlier pods left free) and no annotation of it was
    unusable: kept for the node's next rebuild while the pod is the same value."""

    pod: NodePod
    #: "observed" / "predicted"; None: no placement (unplaced).
    source: str | None
    placement: Placement | None
    #: It holds exclusive resources at zones nobody reported.
    unaccounted: bool
    #: It holds exclusive resources (:func:`holds_exclusive`): the fingerprint counts it.
    exclusive: bool


def _read(
    pod: NodePod,
    topology: NumaTopology,
    free: Mapping[int, Mapping[str, int]],
    *,
    strict: bool,
    problems: list[str],
) -> tuple[_Part, bool]:
    """The pod's part in a reconstruction given the zones' ``free`` amounts so far, and
    whether it may be kept (see :class:`_Part`). Unusable annotations are added to
    ``problems`` (raised with ``strict``)."""
    spec = pod.spec
    keep = True
    for source, read in _sources(spec, topology, free):
        try:
            placement = read()
        except ReconstructionError as exc:
            if strict:
                raise
            problems.append(str(exc))
            keep = False
            continue
        keep = keep and all(len(block) < 2 for block in placement.memory_blocks)
        unaccounted = source == "observed" and kept_by_init(spec, topology)
        part = _Part(pod, source, placement, unaccounted, holds_exclusive(spec, topology))
        return part, keep
    part = _Part(
        pod,
        None,
        None,
        holds_exclusive(spec, topology, zoned=True),
        holds_exclusive(spec, topology),
    )
    return part, keep


@dataclass(frozen=True, eq=False)
class Placements:
    """What the pods on a node say about its zones: all of a reconstruction but the
    comparison with NRT. It depends on the pods and on the NRT's static part (zones,
    managers, fingerprint method), not on ``available`` or the fingerprint, so a caller
    may keep it while only the NRT's free amounts change (:func:`reconstruct_with`)."""

    #: ``allocatable - placements`` (never changed: :func:`reconstruct_with` copies it).
    ledger: ZoneLedger
    sources: Mapping[str, str]
    unplaced: tuple[str, ...]
    problems: tuple[str, ...]
    unaccounted: tuple[str, ...]
    #: The fingerprints of the pods NRT counts, without and with terminal ones (computed
    #: when first compared).
    prints: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    #: pod key -> its part, for the pods whose part may be kept (see :class:`_Part`).
    parts: Mapping[str, _Part] = field(default_factory=dict)
    #: Every non-terminal pod's part is in ``parts``: ``ledger`` is ``allocatable`` less
    #: their placements, each of one-zone blocks only, in any order (see :func:`_updated`).
    whole: bool = False
    #: No pod it was read from is terminal.
    live: bool = False


def placements(
    topology: NumaTopology,
    pods: Sequence[NodePod],
    *,
    strict: bool = True,
    previous: Placements | None = None,
) -> Placements:
    """The zones' use by ``pods`` from their annotations (see :func:`reconstruct`).
    ``previous``: the placements of the node's pods before on an NRT with the same static
    part; the parts of the pods that are still the same values are taken from it (a
    changed node's books re-read only its changed pods), and when every part of it was
    kept, its ledger is updated by the pods that changed (:func:`_updated`)."""
    if previous is not None and previous.whole:
        updated = _updated(topology, pods, previous, strict=strict)
        if updated is not None:
            return updated
    ledger = ZoneLedger(topology, {z.id: z.allocatable for z in topology.zones})
    known = previous.parts if previous is not None else {}
    parts: dict[str, _Part] = {}
    sources: dict[str, str] = {}
    unplaced: list[str] = []
    unaccounted: list[str] = []
    problems: list[str] = []
    terminals = 0
    for pod in pods:
        if pod.terminal:
            terminals += 1
            continue
        key = pod.spec.key
        part = known.get(key)
        if part is None or part.pod is not pod:
            part, keep = _read(pod, topology, ledger.available, strict=strict, problems=problems)
            if keep:
                parts[key] = part
        else:
            parts[key] = part
        if part.placement is None:
            unplaced.append(key)
        else:
            assert part.source is not None
            sources[key] = part.source
            ledger.charge(part.placement)
        if part.unaccounted:
            unaccounted.append(key)
    return Placements(
        ledger=ledger,
        sources=sources,
        unplaced=tuple(unplaced),
        problems=tuple(problems),
        unaccounted=tuple(unaccounted),
        parts=parts,
        whole=len(parts) == len(pods) - terminals,
        live=not terminals,
    )


def _updated(
    topology: NumaTopology, pods: Sequence[NodePod], previous: Placements, *, strict: bool
) -> Placements | None:
    """The placements of ``pods`` as ``previous`` (:attr:`Placements.whole`) updated by the
    pods that changed: the placement of each pod that left or changed is credited back, of
    each pod that came or changed charged. Exact: the free amounts are integer sums, and
    every memory block is a one-zone block (a part with a group over several zones is never
    kept), all equal on their zone, so their order on it does not matter. None when a
    changed pod's part cannot be kept (a memory group over several zones, an unusable
    annotation) or two pods have one key: the caller reads the pods in order instead.

    The fingerprints computed for ``previous`` are kept when the pods are the same ones,
    none terminal, each still holding exclusive resources or not as before (only their
    annotations changed): a fingerprint covers pods by namespace and name."""
    known = previous.parts
    ledger = previous.ledger.copy()
    parts: dict[str, _Part] = {}
    sources: dict[str, str] = {}
    unplaced: list[str] = []
    unaccounted: list[str] = []
    came: list[Placement] = []
    same = previous.live
    terminals = 0
    for pod in pods:
        if pod.terminal:
            terminals += 1
            same = False
            continue
        key = pod.spec.key
        before = part = known.get(key)
        if part is None or part.pod is not pod:
            problems: list[str] = []
            part, keep = _read(pod, topology, ledger.available, strict=strict, problems=problems)
            if not keep:
                return None
            if part.placement is not None:
                came.append(part.placement)
            same = same and before is not None and before.exclusive == part.exclusive
        parts[key] = part
        if part.placement is None:
            unplaced.append(key)
        else:
            assert part.source is not None
            sources[key] = part.source
        if part.unaccounted:
            unaccounted.append(key)
    if len(parts) != len(pods) - terminals:
        return None  # two pods of one key
    for key, part in known.items():
        if part.placement is not None and parts.get(key) is not part:
            ledger.credit(part.placement)
    for placement in came:
        ledger.charge(placement)
    return Placements(
        ledger=ledger,
        sources=sources,
        unplaced=tuple(unplaced),
        problems=(),
        unaccounted=tuple(unaccounted),
        prints=dict(previous.prints) if same and len(parts) == len(known) else {},
        parts=parts,
        whole=True,
        live=not terminals,
    )


def reconstruct_with(
    topology: NumaTopology, placed: Placements, pods: Sequence[NodePod]
) -> Reconstruction:
    """The reconstruction of ``pods`` given their :func:`placements` on this NRT's zones."""
    exact = False
    if topology.fingerprint is not None:
        method = topology.fingerprint_method or METHOD_ALL
        if method not in placed.prints:
            placed.prints[method] = _fingerprints(topology, pods, placed.parts)
        prints = placed.prints[method]
        exact = prints is not None and topology.fingerprint in prints
    unaccounted = placed.unaccounted
    if exact:
        # NRT is current for exactly these pods: its available amounts are the truth (they
        # keep what NRT holds beyond the visible placements); the groups stay rebuilt.
        ledger = ZoneLedger(
            topology, {z.id: z.available for z in topology.zones}, blocks=placed.ledger.blocks
        )
        # Memory no annotation reports (unannotated pods') has unknown groups: NRT does
        # not publish them; assume one-zone blocks.
        ledger.assume_single_blocks()
        unaccounted = ()
    else:
        ledger = ZoneLedger(topology, placed.ledger.available, blocks=placed.ledger.blocks)
    ledger.unaccounted = unaccounted
    return Reconstruction(
        ledger=ledger,
        sources=placed.sources,
        unplaced=placed.unplaced,
        problems=placed.problems,
        unaccounted=unaccounted,
        nrt_exact=exact,
    )


def reconstruct(
    topology: NumaTopology, pods: Iterable[NodePod], *, strict: bool = True
) -> Reconstruction:
    """A ledger of ``allocatable - placements``, or NRT ``available`` when the NRT
    fingerprint says it reflects exactly these pods. With ``strict`` an unusable annotation
    raises :class:`ReconstructionError`; otherwise that pod falls back to its next source
    (observed -> predicted -> unplaced) and the problem is reported."""
    pods = tuple(pods)
    return reconstruct_with(topology, placements(topology, pods, strict=strict), pods)
