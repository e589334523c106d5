"""Walk a pod's admission steps the way the kubelet does, over a scratch copy of a node's
zones. Pure; shared by both evaluators, which differ only in how a step's mask is chosen.

For each step (one per container in container scope, one for the pod in pod scope) the
providers' hints are computed from the scratch zones, a policy picks the mask (or rejects),
and the step's resources are taken inside the mask before the next step looks - exactly
the order of ``scope_container.go`` (hints, merge, admit, allocate, next container).

Init containers: CPUs and devices a regular init container took stay with the pod and a
later container reuses them first (``cpusToReuse`` / ``devicesToReuse``); memory an init
container holds under a mask is reused by a later block under the same mask
(``initContainersReusableMemory``). Native sidecars keep what they take.

Approximation kept: inside a multi-zone mask the kubelet's allocators choose concrete
CPUs / devices by topology (``takeByTopologyNUMAPacked``, the device plugin's preferred
allocation), which NRT cannot show; the walk fills the mask's zones lowest id first
(reusable amounts first) - for CPUs after taking, as ``takeByTopologyNUMAPacked`` does
first, every zone that is wholly free (``available`` equal to ``capacity``: no CPU used
and none reserved) and fits in what is left, lowest id first
(``cpumanager/cpu_assignment.go``, ``takeFullFirstLevel``). A zone holding a reserved CPU
is never whole, so a pod spanning it and a whole zone takes the whole zone first.
Single-zone masks are exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fakenrt.scheduler.evaluator import Evaluation
from fakenrt.scheduler.hints import ResourceHints, cpu_hints, device_hints, memory_hints
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.masks import bits, narrowness
from fakenrt.scheduler.placement import Placement, merge_amounts
from fakenrt.scheduler.requests import AlignmentUnit, UnitKind


@dataclass(frozen=True)
class Choice:
    """A policy's decision for one step: ``mask`` (None = no NUMA preference) or a
    rejection ``reason``."""

    mask: int | None = None
    reason: str | None = None


Chooser = Callable[[AlignmentUnit, list[ResourceHints]], Choice]


class _Walk:
    def __init__(self, ledger: ZoneLedger, *, preferred_default: bool = True) -> None:
        self.scratch = ledger.copy()
        # The Memory Manager's own best hint, taken when the step has no NUMA affinity,
        # must be preferred when the Topology Manager's hint is (restricted,
        # single-numa-node); under policy none the hint is empty and not preferred.
        self.preferred_default = preferred_default
        # resource -> zone -> amount an init container left for later containers to reuse
        self.reusable: dict[str, dict[int, int]] = {}
        # mask -> memory type -> bytes init containers hold under exactly that mask
        self.memory_reusable: dict[int, dict[str, int]] = {}
        self.amounts: dict[int, dict[str, int]] = {}
        self.blocks: list[frozenset[int]] = []
        # NUMA set -> memory type -> bytes taken by blocks over exactly that set
        self.groups: dict[frozenset[int], dict[str, int]] = {}

    def hints(self, unit: AlignmentUnit) -> list[ResourceHints]:
        out: list[ResourceHints] = []
        if unit.cpu:
            out.append(cpu_hints(self.scratch, unit.cpu, self.reusable.get("cpu", {})))
        for name in sorted(unit.devices):
            out.append(
                device_hints(self.scratch, name, unit.devices[name], self.reusable.get(name, {}))
            )
        if unit.memory:
            memory = memory_hints(self.scratch, unit.memory, self.memory_reusable)
            # No feasible mask: the Memory Manager returns no hints, which the Topology
            # Manager reads as "no preference"; its Allocate then decides (below).
            if memory.any_feasible:
                out.append(memory)
        return out

    def _take(
        self, unit: AlignmentUnit, resource: str, amount: int, zones: tuple[int, ...]
    ) -> None:
        reusable = self.reusable.setdefault(resource, {})
        remaining = amount
        reused: dict[int, int] = {}
        for z in sorted(reusable):
            if remaining == 0:
                break
            take = min(reusable[z], remaining)
            if take > 0:
                reused[z] = take
                remaining -= take
        fresh: dict[int, int] = {}
        if resource == "cpu" and len(zones) > 1:
            for z in zones:
                whole = self.scratch.topology.zone(z).capacity.get("cpu", 0)
                if 0 < whole <= remaining and self.scratch.free(z, "cpu") == whole:
                    fresh[z] = whole
                    remaining -= whole
        for z in zones:
            if remaining == 0:
                break
            take = min(max(self.scratch.free(z, resource) - fresh.get(z, 0), 0), remaining)
            if take > 0:
                fresh[z] = fresh.get(z, 0) + take
                remaining -= take
        if remaining:  # cannot happen for a feasible mask; keep the books balanced anyway
            fresh[zones[0]] = fresh.get(zones[0], 0) + remaining
        for z, n in fresh.items():
            self.scratch.available[z][resource] = self.scratch.free(z, resource) - n
            merge_amounts(self.amounts, z, resource, n)
        if unit.kind == UnitKind.INIT:
            for z, n in fresh.items():
                reusable[z] = reusable.get(z, 0) + n
        elif unit.kind == UnitKind.APP:
            for z, n in reused.items():
                reusable[z] -= n
        elif resource != "cpu":
            # A native sidecar keeps the devices it reused (``removeContainerAllocatedResources``
            # in the Device Manager); the CPU Manager leaves its reuse set untouched for it.
            for z, n in reused.items():
                reusable[z] -= n
        for z in [z for z, n in reusable.items() if n <= 0]:
            del reusable[z]

    def _take_memory(self, kind: UnitKind, memory: Mapping[str, int], mask: int) -> None:
        zones = bits(mask)
        block = frozenset(zones)
        reusable = self.memory_reusable.setdefault(mask, {})
        for mtype, size in sorted(memory.items()):
            reuse = reusable.get(mtype, 0)
            remaining = max(size - reuse, 0)
            if remaining:
                group = self.groups.setdefault(block, {})
                group[mtype] = group.get(mtype, 0) + remaining
            for z in zones:
                if remaining == 0:
                    break
                take = min(max(self.scratch.free(z, mtype), 0), remaining)
                if take > 0:
                    self.scratch.available[z][mtype] = self.scratch.free(z, mtype) - take
                    merge_amounts(self.amounts, z, mtype, take)
                    remaining -= take
            if remaining:
                z = zones[0]
                self.scratch.available[z][mtype] = self.scratch.free(z, mtype) - remaining
                merge_amounts(self.amounts, z, mtype, remaining)
            if kind == UnitKind.INIT:
                reusable[mtype] = max(reuse, size)
            elif kind == UnitKind.APP:
                reusable[mtype] = max(reuse - size, 0)
            self.blocks.append(block)
            self.scratch.charge(Placement(memory_blocks=(block,)))

    def _memory_mask(self, name: str, memory: Mapping[str, int], mask: int | None) -> int | str:
        """The mask the Memory Manager allocates a container's memory in, given the
        Topology Manager's hint - or why it fails (``Allocate`` in
        ``memorymanager/policy_static.go``). No NUMA affinity: the container's own best hint,
        which must be preferred. Otherwise the mask's free bytes must cover the request
        (``isAffinitySatisfyRequest``), else it is extended to the narrowest feasible hint
        containing it, which must be preferred (``extendTopologyManagerHint``). The result
        must respect the groups. A failure is the kubelet's UnexpectedAdmissionError."""
        if mask is None:
            hints = memory_hints(self.scratch, memory, self.memory_reusable, full=True)
            if not hints.feasible:
                return f"memory manager: container {name}: {hints.resource} fits no NUMA zones"
            if not hints.preferred and not self.preferred_default:
                best = min(hints.feasible, key=narrowness)
            elif not hints.preferred:
                return (
                    f"memory manager: container {name}: {hints.resource} fits only "
                    "non-preferred NUMA zones"
                )
            else:
                best = min(hints.preferred, key=narrowness)
        else:
            zones = bits(mask)
            best = mask
            if not all(
                sum(max(self.scratch.free(z, t), 0) for z in zones) >= size
                for t, size in memory.items()
            ):
                hints = memory_hints(self.scratch, memory, self.memory_reusable, full=True)
                wider = [m for m in hints.feasible if m & mask == mask]
                if not wider:
                    return (
                        f"memory manager: container {name}: {hints.resource} does not fit "
                        f"NUMA zones {list(zones)} or any wider set holding them"
                    )
                preferred = [m for m in wider if m.bit_count() == hints.min_width]
                if not preferred:
                    return (
                        f"memory manager: container {name}: {hints.resource} fits around "
                        f"NUMA zones {list(zones)} only on a non-preferred set"
                    )
                best = min(preferred, key=narrowness)
        if self.scratch.breaks_group(best):
            return f"memory manager: container {name}: NUMA zones {list(bits(best))} break a group"
        return best

    def allocate(self, unit: AlignmentUnit, mask: int | None) -> str | None:
        """Take the step's resources inside ``mask`` (None: no provider had a preference);
        returns why the kubelet's allocation would fail (None when it succeeds)."""
        if mask is not None:
            zones = bits(mask)
            if unit.cpu:
                self._take(unit, "cpu", unit.cpu, zones)
            for name in sorted(unit.devices):
                self._take(unit, name, unit.devices[name], zones)
        if unit.kind == UnitKind.POD:
            # Pod scope: every container allocates its own memory inside the pod's hint,
            # init containers first (``scope_pod.go``, then the Memory Manager's Allocate).
            steps = unit.container_memory
        else:
            steps = ((unit.container or "", unit.kind, unit.memory),) if unit.memory else ()
        for name, kind, memory in steps:
            chosen = self._memory_mask(name, memory, mask)
            if isinstance(chosen, str):
                return chosen
            self._take_memory(kind, memory, chosen)
        return None


def walk_units(ledger: ZoneLedger, units: tuple[AlignmentUnit, ...], choose: Chooser) -> Evaluation:
    """Run every admission step; the first rejected step rejects the pod."""
    walk = _Walk(ledger)
    for unit in units:
        if unit.empty:
            continue
        choice = choose(unit, walk.hints(unit))
        if choice.reason is not None:
            return Evaluation(fit=False, reason=choice.reason)
        problem = walk.allocate(unit, choice.mask)
        if problem is not None:
            return Evaluation(fit=False, reason=problem)
    placement = Placement(
        amounts={z: dict(a) for z, a in sorted(walk.amounts.items())},
        memory_blocks=tuple(walk.blocks),
        memory_groups={n: dict(a) for n, a in walk.groups.items()},
    )
    return Evaluation(fit=True, placement=placement)


def memory_without_affinity(ledger: ZoneLedger, units: tuple[AlignmentUnit, ...]) -> str | None:
    """Why the Memory Manager's ``Allocate`` fails a pod on a node whose Topology Manager
    gives no NUMA affinity (policy ``none``: ``admitPolicyNone`` hands every container the
    empty hint), or None: per container in order, its best feasible hint, preferred or not
    (``getDefaultHint``), must exist and respect the groups. Used for ``best-effort`` too,
    where the merged hint may name a mask: an approximation (the Memory Manager then
    extends a mask too small for the request to a wider preferred one)."""
    walk = _Walk(ledger, preferred_default=False)
    for unit in units:
        if unit.memory or unit.container_memory:
            problem = walk.allocate(unit, None)
            if problem is not None:
                return problem
    return None
