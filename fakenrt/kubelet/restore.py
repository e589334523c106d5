"""Checking a recorded pod allocation against a node before it is restored. Pure.

A real kubelet restarted keeps every container's exact CPU ids, device ids and memory
blocks: it reads them back from its checkpoints (``cpu_manager_state``,
``kubelet_internal_checkpoint``, ``memory_manager_state``) instead of running the
hint providers again. :meth:`fakenrt.kubelet.node.NodeState.restore` does the same with a
:class:`~fakenrt.kubelet.allocation.PodAllocation`; the functions here decide whether the
allocation can be applied to the node's current state and compute the new state, or
raise :class:`RestoreError` naming the node, the pod, the container and the id.

Ids inside one pod: the kubelet hands a regular init container's CPUs and devices to the
containers that start after it (``cpumanager/policy_static.go`` ``cpusToReuse``,
``devicemanager/manager.go`` ``devicesToReuse``), so one id may appear in several
containers of a pod - allowed here only when every holder but the last is a regular init
container.

Memory: the Memory Manager's books are recomputed from the blocks, in the order given,
each block filling its NUMA nodes in ascending order - what the kubelet's
``validateState`` (``memorymanager/policy_static.go``) computes as the expected machine
state from its checkpointed assignments. ``validateState`` itself drops bytes that find
no room and then refuses the state, because it differs from the checkpointed one; a
block without room is refused here instead (:meth:`NodeState.restart_problem` tells
whether a live node's checkpoints would pass at all).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

from fakenrt.kubelet.allocation import INIT, REGULAR, SIDECAR, ContainerAllocation, PodAllocation
from fakenrt.kubelet.bitmask import BitMask
from fakenrt.kubelet.provider_devices import DeviceInventory
from fakenrt.kubelet.provider_memory import (
    Block,
    MachineState,
    clone_state,
    update_machine_state,
    violates_groups,
)
from fakenrt.podspec import PodSpec

_K = TypeVar("_K", bound=Hashable)


class RestoreError(ValueError):
    """A recorded allocation that cannot be applied to the node's current state."""


def check_containers(where: str, pod: PodSpec, allocation: PodAllocation) -> None:
    """The allocation is the pod's: same key and uid, one entry per container of the pod
    (init containers first, in spec order) with the right kind."""
    if allocation.key != pod.key:
        raise RestoreError(f"{where}: the allocation is for pod {allocation.key}")
    if allocation.uid != pod.uid:
        raise RestoreError(
            f"{where}: the allocation is for uid {allocation.uid!r}, the pod has uid {pod.uid!r}"
        )
    expected = [(c.name, SIDECAR if c.restartable else INIT) for c in pod.init_containers]
    expected += [(c.name, REGULAR) for c in pod.containers]
    got = [(c.name, c.kind) for c in allocation.containers]
    if got != expected:
        raise RestoreError(
            f"{where}: the allocation lists containers {_names(got)}, the pod has "
            f"{_names(expected)}"
        )


def _names(pairs: Iterable[tuple[str, str]]) -> str:
    return "[" + ", ".join(f"{name} ({kind})" for name, kind in pairs) + "]"


def _pod_ids(
    where: str,
    containers: tuple[ContainerAllocation, ...],
    ids_of: Callable[[ContainerAllocation], Iterable[_K]],
    what: str,
) -> dict[_K, str]:
    """Every id the pod holds -> the first container holding it. An id held by several
    containers must be handed on by regular init containers only."""
    holders: dict[_K, list[ContainerAllocation]] = {}
    for c in containers:
        for i in ids_of(c):
            holders.setdefault(i, []).append(c)
    for i, cs in holders.items():
        if any(c.kind != INIT for c in cs[:-1]):
            names = ", ".join(c.name for c in cs)
            raise RestoreError(
                f"{where}: {what} {i} is held by containers {names} at the same time"
            )
    return {i: cs[0].name for i, cs in holders.items()}


def restore_cpus(
    where: str,
    allocation: PodAllocation,
    *,
    node_cpus: frozenset[int],
    reserved: frozenset[int],
    default: frozenset[int],
    static: bool,
) -> frozenset[int]:
    """The shared pool once the pod's CPUs are taken out of it."""
    held = _pod_ids(where, allocation.containers, lambda c: sorted(c.cpus), "cpu")
    if held and not static:
        container = next(iter(held.values()))
        raise RestoreError(
            f"{where}: container {container}: holds CPUs but the node's cpuManagerPolicy is none"
        )
    for cpu, container in held.items():
        at = f"{where}: container {container}: cpu {cpu}"
        if cpu not in node_cpus:
            raise RestoreError(f"{at} does not exist on the node")
        if cpu in reserved:
            raise RestoreError(f"{at} is reserved (reservedSystemCPUs)")
        if cpu not in default:
            raise RestoreError(f"{at} is already held")
    return default - frozenset(held)


def _devices_of(resource: str) -> Callable[[ContainerAllocation], tuple[str, ...]]:
    return lambda c: tuple(c.devices.get(resource, ()))


def restore_devices(
    where: str,
    allocation: PodAllocation,
    *,
    inventory: DeviceInventory,
    allocated: Mapping[str, frozenset[str]],
) -> dict[str, frozenset[str]]:
    """The allocated device ids per resource once the pod's devices are added."""
    out = dict(allocated)
    resources = sorted({r for c in allocation.containers for r in c.devices})
    for resource in resources:
        held = _pod_ids(where, allocation.containers, _devices_of(resource), resource)
        known = {d.id: d for d in inventory.devices.get(resource, ())}
        for device, container in held.items():
            at = f"{where}: container {container}: {resource} device {device}"
            if device not in known:
                raise RestoreError(f"{at} does not exist on the node")
            if not known[device].healthy:
                raise RestoreError(f"{at} is unhealthy")
            if device in allocated.get(resource, frozenset()):
                raise RestoreError(f"{at} is already held")
        out[resource] = out.get(resource, frozenset()) | frozenset(held)
    return out


def restore_memory(
    where: str, allocation: PodAllocation, *, state: MachineState, static: bool
) -> tuple[MachineState, tuple[Block, ...]]:
    """A copy of the Memory Manager's machine state with the pod's blocks charged, and
    the blocks as the state keeps them (for the release)."""
    out = clone_state(state)
    blocks: list[Block] = []
    for c in allocation.containers:
        for b in c.memory:
            at = f"{where}: container {c.name}: {b.type} block over NUMA {sorted(b.numa)}"
            if not static:
                raise RestoreError(f"{at}: the node's memoryManagerPolicy is None")
            numa = tuple(sorted(b.numa))
            missing = [n for n in numa if n not in out]
            if not numa or missing:
                raise RestoreError(f"{at}: NUMA node {missing or '(none)'} does not exist")
            tables = [out[n].tables.get(b.type) for n in numa]
            if b.size < 0 or any(t is None for t in tables):
                raise RestoreError(f"{at}: the node has no {b.type} of size {b.size}")
            free = sum(t.free for t in tables if t is not None)
            if free < b.size:
                raise RestoreError(
                    f"{at}: {b.size} bytes exceed the {free} bytes free on those NUMA nodes"
                )
            if violates_groups(out, BitMask.from_bits(numa)):
                raise RestoreError(
                    f"{at}: those NUMA nodes already hold memory of another NUMA group"
                )
            update_machine_state(out, numa, b.type, b.size)
            blocks.append(Block(b.type, b.size, numa))
    return out, tuple(blocks)
