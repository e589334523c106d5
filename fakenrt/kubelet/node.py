"""One simulated node: the kubelet's admission, its resource managers' state, and what
every admitted pod holds. Pure (no I/O).

Admission follows the kubelet's order of admit handlers (``pkg/kubelet/kubelet.go``): the
Topology Manager with its hint providers - device manager, CPU manager, Memory Manager,
registered in that order (``pkg/kubelet/cm/container_manager_linux.go``) - runs first and
allocates; then the whole-node fit check (:mod:`fakenrt.kubelet.predicate`). A pod
rejected by either holds nothing: every provider works on a private copy of its state
that is committed only when the pod is admitted. (The kubelet frees a rejected pod's
allocations lazily, at its next admission; the end state is the same.)

A pod's ResourceClaims are not part of admission: once admitted, :meth:`NodeState.prepare`
has the node's DRA manager (:mod:`fakenrt.kubelet.dra`) prepare them, as the kubelet does
when it syncs the pod, and what is prepared shows in the containers' ``dynamic``.

Exclusive resources of pods outside the simulation (the profile's ``allocated``) are
taken at start: CPUs picked by the static policy's algorithm inside the zone, single-NUMA
memory blocks, the zone's first healthy devices. They are never released. The pods that
hold them and the pods of the profile's ``foreignRequests``
(:mod:`fakenrt.kubelet.foreign`) count in the whole-node fit check with their requests,
as every pod on a node does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from fakenrt.hashed import Hashed
from fakenrt.kubelet import predicate, scope_container, scope_none, scope_pod
from fakenrt.kubelet.admission_memo import (
    AdmissionMemo,
    Admitted,
    Decided,
    memory_key,
    shared_memo,
    state_key,
)
from fakenrt.kubelet.allocation import (
    INIT,
    REGULAR,
    SIDECAR,
    AdmissionResult,
    ContainerAllocation,
    MemoryBlock,
    PodAllocation,
)
from fakenrt.kubelet.cpu_assignment import CpuAllocationError, take_cpus
from fakenrt.kubelet.dra import ClaimInfo, ClaimLookup, DraManager
from fakenrt.kubelet.foreign import ForeignPod, foreign_pod_specs
from fakenrt.kubelet.memory_checkpoint import MemoryCheckpoint, checkpoint_problem
from fakenrt.kubelet.numa_info import NumaInfo
from fakenrt.kubelet.policies import PolicyError, new_policy
from fakenrt.kubelet.policy import Policy
from fakenrt.kubelet.provider import HintProvider
from fakenrt.kubelet.provider_cpu import CpuProvider
from fakenrt.kubelet.provider_devices import DeviceInventory, DeviceProvider
from fakenrt.kubelet.provider_memory import (
    Block,
    MachineState,
    MemoryProvider,
    clone_state,
    initial_machine_state,
    is_memory_type,
    release_blocks,
    update_machine_state,
)
from fakenrt.kubelet.restore import (
    RestoreError,
    check_containers,
    restore_cpus,
    restore_devices,
    restore_memory,
)
from fakenrt.kubelet.scope import all_containers
from fakenrt.kubelet.topology import CpuTopology
from fakenrt.podspec import PodSpec
from fakenrt.profiles.model import DraDriver, NodeProfile
from fakenrt.profiles.resources import node_allocatable_units, zone_capacity

_SCOPES: dict[str, ModuleType] = {scope_container.NAME: scope_container, scope_pod.NAME: scope_pod}


@dataclass(frozen=True)
class _Static:
    """What never changes for a node."""

    profile: NodeProfile
    topo: CpuTopology
    inventory: DeviceInventory
    policy: Policy
    scope: ModuleType
    allocatable: Mapping[str, int]  # predicate units (cpu in millicores)
    cpu_static: bool
    memory_static: bool
    #: The pods outside the simulation (:mod:`fakenrt.kubelet.foreign`).
    foreign_pods: tuple[ForeignPod, ...]
    drivers: Mapping[str, DraDriver]
    #: Admission decisions kept by state and pod shape, shared by the nodes of this
    #: profile but for its name (None: every admission is computed).
    memo: AdmissionMemo | None
    #: Per zone id: every resource of the zone (the keys of its capacity), in order.
    zone_resources: Mapping[int, tuple[str, ...]]
    #: Per zone id: resource -> the ids of the zone's devices.
    zone_devices: Mapping[int, Mapping[str, frozenset[str]]]


def _static(profile: NodeProfile, *, remember: bool) -> _Static:
    cfg = profile.kubelet
    numa = NumaInfo.build(
        profile.zone_ids,
        {a: {b: profile.distance(a, b) for b in profile.zone_ids} for a in profile.zone_ids},
    )
    policy = new_policy(
        cfg.topology_manager_policy,
        numa,
        prefer_closest_numa_nodes=cfg.prefer_closest_numa_nodes,
        max_numa_nodes=cfg.max_allowable_numa_nodes,
    )
    if policy.name == scope_none.NAME:
        scope: ModuleType = scope_none
    elif cfg.topology_manager_scope in _SCOPES:
        scope = _SCOPES[cfg.topology_manager_scope]
    else:
        raise PolicyError(f'unknown scope: "{cfg.topology_manager_scope}"')
    if cfg.cpu_manager_policy not in ("none", "static"):
        raise PolicyError(f"unknown cpuManagerPolicy {cfg.cpu_manager_policy!r}")
    if cfg.memory_manager_policy not in ("None", "Static"):
        raise PolicyError(f"unknown memoryManagerPolicy {cfg.memory_manager_policy!r}")
    allocatable = dict(node_allocatable_units(profile))
    return _Static(
        profile=profile,
        topo=CpuTopology.from_profile(profile),
        inventory=DeviceInventory.from_profile(profile),
        policy=policy,
        scope=scope,
        allocatable=allocatable,
        cpu_static=cfg.cpu_manager_policy == "static",
        memory_static=cfg.memory_manager_policy == "Static",
        foreign_pods=foreign_pod_specs(profile),
        drivers={d.name: d for d in profile.dra},
        memo=shared_memo(profile) if remember else None,
        zone_resources={z: tuple(amounts) for z, amounts in zone_capacity(profile).items()},
        zone_devices={
            z.id: {name: frozenset(dset.ids) for name, dset in z.devices.items()}
            for z in profile.zones
        },
    )


class NodeState:
    """A node's kubelet admission state. Build with :meth:`from_profile`."""

    def __init__(self, static: _Static, **state: Any) -> None:
        self._s = static
        self._cpu_default: frozenset[int] = state["cpu_default"]
        self._dev_allocated: dict[str, frozenset[str]] = state["dev_allocated"]
        self._mem: MachineState = state["mem"]
        #: The machine state and its :func:`memory_key` (the state is replaced, never
        #: modified, once the node holds it: kept while the node holds the same one).
        self._mem_key: tuple[MachineState, Hashed] | None = None
        #: Counts the changes of what the node holds (admissions, restores, claims
        #: prepared, releases): equal versions of one node, the same allocations and usage.
        self.version = 0
        self._pods: dict[str, PodAllocation] = state["pods"]
        self._blocks: dict[str, tuple[Block, ...]] = state["blocks"]
        self._requests: dict[str, dict[str, int]] = state["requests"]
        self._used: dict[str, int] = state["used"]
        self._foreign: dict[int, ContainerAllocation] = state["foreign"]
        self._dra: DraManager = state["dra"]
        #: Admitted pods that have ResourceClaims: their specs (the DRA manager needs them).
        self._claiming: dict[str, PodSpec] = state["claiming"]

    # -- construction ----------------------------------------------------------------
    @classmethod
    def from_profile(cls, profile: NodeProfile, *, remember: bool = True) -> NodeState:
        """A node with no simulated pod yet, the profile's foreign allocations applied.
        ``remember``: admissions decided by a node of the same profile in the same state
        for a pod of the same shape are reused (:mod:`fakenrt.kubelet.admission_memo`;
        the same decisions, computed once). Raises ValueError (``PolicyError``) for a
        kubelet configuration the kubelet would refuse, or foreign allocations that do
        not fit."""
        static = _static(profile, remember=remember)
        cfg = profile.kubelet
        reserved = cfg.reserved_cpus
        default = frozenset(static.topo.cpus)
        allocated: dict[str, frozenset[str]] = {}
        mem = initial_machine_state(profile)
        # The foreign pods' requests count in the fit check, as every pod's do (the kubelet's
        # predicate sums the requests of every pod on the node, its control plane's too).
        used: dict[str, int] = {}
        for foreign_pod in static.foreign_pods:
            for name, amount in predicate.pod_request_units(foreign_pod.spec).items():
                used[name] = used.get(name, 0) + amount
        foreign: dict[int, ContainerAllocation] = {}
        for zone in profile.zones:
            cpus: frozenset[int] = frozenset()
            devices: dict[str, tuple[str, ...]] = {}
            memory: list[MemoryBlock] = []
            for name, amount in sorted(zone.allocated.items()):
                where = f"node {profile.name}: zone {zone.id}: allocated.{name}"
                if amount <= 0:
                    continue
                if name == "cpu":
                    free = (zone.cpus & default) - reserved
                    try:
                        cpus = take_cpus(static.topo, free, amount, cfg.cpu_options)
                    except CpuAllocationError:
                        raise ValueError(f"{where}: only {len(free)} CPUs can be held") from None
                    default -= cpus
                elif is_memory_type(name):
                    table = mem[zone.id].tables.get(name)
                    if table is None or table.free < amount:
                        raise ValueError(f"{where}: more than the zone's allocatable {name}")
                    update_machine_state(mem, (zone.id,), name, amount)
                    memory.append(MemoryBlock(name, amount, frozenset((zone.id,))))
                else:
                    dset = zone.devices.get(name)
                    healthy = [] if dset is None else list(dset.healthy)
                    if len(healthy) < amount:
                        raise ValueError(f"{where}: the zone has {len(healthy)} healthy devices")
                    allocated[name] = allocated.get(name, frozenset()) | set(healthy[:amount])
                    devices[name] = tuple(healthy[:amount])
            if cpus or devices or memory:
                foreign[zone.id] = ContainerAllocation(
                    name="foreign", cpus=cpus, devices=devices, memory=tuple(memory)
                )
        return cls(
            static,
            cpu_default=default,
            dev_allocated=allocated,
            mem=mem,
            pods={},
            blocks={},
            requests={},
            used=used,
            foreign=foreign,
            dra=DraManager(profile.name, static.drivers),
            claiming={},
        )

    def copy(self) -> NodeState:
        """An independent copy (admitting into it leaves this node unchanged)."""
        return NodeState(
            self._s,
            cpu_default=self._cpu_default,
            dev_allocated=dict(self._dev_allocated),
            mem=clone_state(self._mem),
            pods=dict(self._pods),
            blocks=dict(self._blocks),
            requests=dict(self._requests),
            used=dict(self._used),
            foreign=self._foreign,
            dra=self._dra.copy(),
            claiming=dict(self._claiming),
        )

    @property
    def profile(self) -> NodeProfile:
        return self._s.profile

    # -- admission -------------------------------------------------------------------
    def admit(self, pod: PodSpec) -> AdmissionResult:
        """Decide as the kubelet would; when admitted, the pod's allocation is applied.
        Raises ValueError when a pod with the same key is already admitted."""
        if pod.key in self._pods:
            raise ValueError(f"pod {pod.key} is already admitted on node {self.profile.name}")
        memo = self._s.memo
        if memo is None:
            return self._apply(pod, self._decide(pod))
        key = state_key(
            cpu_default=self._cpu_default,
            devices=self._dev_allocated,
            memory=self._memory_key(),
            used=self._used,
            pods=len(self._pods),
            pod=pod,
            node_name=self._s.profile.name,
        )
        decided = memo.get(key)
        if decided is None:
            decided = self._decide(pod)
            memo.put(key, decided)
        return self._apply(pod, decided)

    def _memory_key(self) -> Hashed:
        kept = self._mem_key
        if kept is None or kept[0] is not self._mem:
            kept = self._mem_key = (self._mem, memory_key(self._mem))
        return kept[1]

    def _apply(self, pod: PodSpec, decided: Decided) -> AdmissionResult:
        """The result of ``decided`` for ``pod``; when admitted, the node holds it."""
        admitted = decided.admitted
        if admitted is None:
            return AdmissionResult(pod.key, False, decided.reason, decided.message, decided.hints)
        allocation = PodAllocation(pod.namespace, pod.name, pod.uid, admitted.containers)
        self._hold(
            pod,
            allocation,
            request=admitted.request,
            cpu_default=admitted.cpu_default,
            devices=dict(admitted.devices),
            memory=admitted.memory,
            blocks=admitted.blocks,
        )
        return AdmissionResult(pod.key, True, None, None, decided.hints, allocation)

    def _decide(self, pod: PodSpec) -> Decided:
        """Decide as the kubelet would on the node as it is (which is left unchanged)."""
        s = self._s
        cfg = s.profile.kubelet
        cpu = CpuProvider(s.topo, cfg.reserved_cpus, self._cpu_default, cfg.cpu_options)
        dev = DeviceProvider(s.inventory, self._dev_allocated)
        mem = MemoryProvider(clone_state(self._mem))
        providers: list[HintProvider] = [dev]
        if s.cpu_static:
            providers.append(cpu)
        if s.memory_static:
            providers.append(mem)
        outcome = s.scope.admit(pod, s.policy, providers)
        hints = tuple(outcome.reports)
        if not outcome.admit:
            return Decided(False, outcome.reason, outcome.message, hints)
        request, failure = self._fit(pod)
        if failure is not None:
            return Decided(False, failure.reason, failure.message, hints)
        kinds = {c.name: SIDECAR if c.restartable else INIT for c in pod.init_containers}
        kinds.update({c.name: REGULAR for c in pod.containers})
        containers = tuple(
            ContainerAllocation(
                name=c.name,
                cpus=cpu.assigned.get(c.name, frozenset()),
                devices={k: v for k, v in dev.assigned.get(c.name, {}).items() if v},
                memory=tuple(
                    MemoryBlock(b.type, b.size, frozenset(b.numa))
                    for b in mem.assigned.get(c.name, ())
                ),
                kind=kinds[c.name],
            )
            for c in all_containers(pod)
        )
        blocks = tuple(b for c in all_containers(pod) for b in mem.assigned.get(c.name, ()))
        admitted = Admitted(
            containers=containers,
            cpu_default=cpu.default_set,
            devices=dev.allocated,
            memory=mem.state if s.memory_static else self._mem,
            blocks=blocks,
            request=request,
        )
        return Decided(True, None, None, hints, admitted)

    def restore(self, pod: PodSpec, allocation: PodAllocation) -> None:
        """Apply exactly ``allocation`` (recorded when the pod was admitted) without asking
        the hint providers, as a restarted kubelet restores its checkpoints: the CPU ids,
        device ids and memory blocks of every container, the pod's requests in the
        whole-node fit check, and the pod's place at the end of the admission order.
        Restoring a node's surviving allocations in their admission order on a fresh
        state gives the state the node had (see :mod:`fakenrt.kubelet.restore` for the
        Memory Manager's books). Raises ValueError (:class:`RestoreError`) naming the pod,
        the container and the id when the allocation cannot be applied to this state;
        the state is then unchanged."""
        s = self._s
        where = f"node {s.profile.name}: pod {pod.key}"
        if pod.key in self._pods:
            raise RestoreError(f"{where}: the pod already holds resources on the node")
        check_containers(where, pod, allocation)
        default = restore_cpus(
            where,
            allocation,
            node_cpus=frozenset(s.topo.cpus),
            reserved=s.profile.kubelet.reserved_cpus,
            default=self._cpu_default,
            static=s.cpu_static,
        )
        devices = restore_devices(
            where, allocation, inventory=s.inventory, allocated=self._dev_allocated
        )
        mem, blocks = restore_memory(where, allocation, state=self._mem, static=s.memory_static)
        request, failure = self._fit(pod)
        if failure is not None:
            raise RestoreError(f"{where}: {failure.reason}: {failure.message}")
        self._hold(
            pod,
            allocation,
            request=request,
            cpu_default=default,
            devices=devices,
            memory=mem,
            blocks=blocks,
        )

    def _fit(self, pod: PodSpec) -> tuple[dict[str, int], predicate.PredicateFailure | None]:
        """The pod's requests and the whole-node fit check's failure, if any."""
        s = self._s
        request = predicate.pod_request_units(pod)
        failure = predicate.check(
            node_name=s.profile.name,
            pod=pod,
            request=request,
            allocatable=s.allocatable,
            used=self._used,
            pod_count=len(self._pods) + len(s.foreign_pods),
        )
        return request, failure

    def _hold(
        self,
        pod: PodSpec,
        allocation: PodAllocation,
        *,
        request: Mapping[str, int],
        cpu_default: frozenset[int],
        devices: dict[str, frozenset[str]],
        memory: MachineState,
        blocks: tuple[Block, ...],
    ) -> None:
        """Make an admitted or restored pod's allocation the node's state (its claims are
        prepared later, by :meth:`prepare`)."""
        pod_key = pod.key
        if any(c.dynamic for c in allocation.containers):
            allocation = replace(
                allocation,
                containers=tuple(replace(c, dynamic=()) for c in allocation.containers),
            )
        self.version += 1
        if pod.resource_claims:
            self._claiming[pod_key] = pod
        self._cpu_default = cpu_default
        self._dev_allocated = devices
        if self._s.memory_static:
            self._mem = memory
            self._blocks[pod_key] = blocks
        self._pods[pod_key] = allocation
        self._requests[pod_key] = dict(request)
        for name, amount in request.items():
            self._used[name] = self._used.get(name, 0) + amount

    def prepare(
        self, pod_key: str, lookup: ClaimLookup, *, spec: PodSpec | None = None
    ) -> str | None:
        """Prepare the ResourceClaims of an admitted pod, as the kubelet does when it syncs
        the pod (claims are looked up by namespace and name, as the kubelet gets them from
        the API server). Returns the kubelet's error, without its ``prepare dynamic
        resources:`` prefix, when they cannot be prepared (the pod then stays Pending and
        the kubelet retries); None when every claim is prepared (also for a pod without
        claims). ``spec``: the pod as it is now (its ``status.resourceClaimStatuses`` can
        have changed since its admission). Raises ValueError for a pod that is not
        admitted."""
        if pod_key not in self._pods:
            raise ValueError(f"pod {pod_key} is not admitted on node {self.profile.name}")
        if spec is not None and pod_key in self._claiming:
            self._claiming[pod_key] = spec
        pod = self._claiming.get(pod_key)
        if pod is None:
            return None
        error = self._dra.prepare(pod, lookup)
        self._refresh_dynamic()
        self.version += 1
        return error

    def update_claiming(self, pod_key: str, spec: PodSpec) -> None:
        """The admitted pod as it is now (its ``status.resourceClaimStatuses`` change as
        its template claims are made), for the next :meth:`prepare`."""
        if pod_key in self._claiming:
            self._claiming[pod_key] = spec

    def prepared(self, pod_key: str) -> bool:
        """Whether every claim of the admitted pod is prepared (True without claims)."""
        pod = self._claiming.get(pod_key)
        if pod is None:
            return pod_key in self._pods
        return self._dra.is_prepared(pod)

    def _refresh_dynamic(self) -> None:
        """Put what podresources lists of each claiming pod's claims into its allocation."""
        for key, pod in self._claiming.items():
            specs = {c.name: c for c in all_containers(pod)}
            allocation = self._pods[key]
            containers = tuple(
                replace(c, dynamic=self._dra.container_resources(pod, specs[c.name]))
                for c in allocation.containers
            )
            if containers != allocation.containers:
                self._pods[key] = replace(allocation, containers=containers)

    def release(self, pod_key: str) -> None:
        """Give back exactly what the pod holds, and unprepare the claims no other pod
        uses. An unknown key is a no-op."""
        allocation = self._pods.pop(pod_key, None)
        if allocation is None:
            return
        self.version += 1
        claiming = self._claiming.pop(pod_key, None)
        if claiming is not None:
            self._dra.unprepare(claiming)
            self._refresh_dynamic()
        cpus: set[int] = set()
        devices: dict[str, set[str]] = {}
        for c in allocation.containers:
            cpus |= c.cpus
            for name, ids in c.devices.items():
                devices.setdefault(name, set()).update(ids)
        self._cpu_default = self._cpu_default | cpus
        for name, held in devices.items():
            self._dev_allocated[name] = self._dev_allocated.get(name, frozenset()) - held
        blocks = self._blocks.pop(pod_key, ())
        if blocks:
            self._mem = clone_state(self._mem)
            release_blocks(self._mem, blocks)
        for name, amount in self._requests.pop(pod_key, {}).items():
            self._used[name] = self._used.get(name, 0) - amount

    def restart_problem(self) -> str | None:
        """Why a kubelet restarted on this node's checkpoints would refuse to start, or
        None. Its static Memory Manager recomputes the machine state from the checkpointed
        blocks and refuses a state that differs from the checkpointed one
        (``validateState`` / ``areMachineStatesEqual``, ``memorymanager/policy_static.go``;
        ``Start`` then fails: "Invalid state, please drain node and remove policy state
        file"). The live books can differ from the recomputation when a block over several
        NUMA nodes was released (``RemoveContainer`` gives bytes back from the block's
        first node whatever node held them) and a later one-node block was then placed on
        a node of that group (a single-NUMA hint is never checked against the groups,
        ``isAffinityViolatingNUMAAllocations``): the recomputation fills the group's
        first node again, where the one-node block's bytes now sit. Blocks are
        recomputed in admission order (the kubelet iterates a map; a node whose blocks
        have different NUMA sets may be refused under other orders too)."""
        checkpoint = self.memory_checkpoint()
        return None if checkpoint is None else self.checkpoint_problem(checkpoint)

    def memory_checkpoint(self) -> MemoryCheckpoint | None:
        """What the static Memory Manager's checkpoint holds now: the machine state and
        every pod's blocks in admission order (None when the policy is not Static). The
        machine state is the node's own, not a copy (the node replaces it on every
        change and never modifies it in place): read it, do not modify it."""
        if not self._s.memory_static:
            return None
        blocks = tuple(b for pod in self._pods for b in self._blocks.get(pod, ()))
        return MemoryCheckpoint(self._mem, blocks)

    def checkpoint_problem(self, checkpoint: MemoryCheckpoint) -> str | None:
        """Why a kubelet configured as this node refuses to start on ``checkpoint`` (see
        :func:`fakenrt.kubelet.memory_checkpoint.checkpoint_problem`), or None; always
        None when the node's Memory Manager is not Static."""
        if not self._s.memory_static:
            return None
        problem = checkpoint_problem(
            NodeState.from_profile(self.profile, remember=False)._mem, checkpoint
        )
        if problem is None:
            return None
        return f"node {self.profile.name}: memory manager: {problem}"

    # -- views -----------------------------------------------------------------------
    def foreign(self) -> Mapping[int, ContainerAllocation]:
        """Per zone id: what the profile's foreign ``allocated`` holds there (the CPU ids,
        device ids and one-zone memory blocks taken at start), for zones holding any."""
        return dict(self._foreign)

    def foreign_pods(self) -> tuple[ForeignPod, ...]:
        """The pods outside the simulation the node runs (:mod:`fakenrt.kubelet.foreign`)."""
        return self._s.foreign_pods

    def allocation(self, pod_key: str) -> PodAllocation | None:
        """What an admitted pod holds (None: not admitted here)."""
        return self._pods.get(pod_key)

    def claims(self) -> Mapping[str, ClaimInfo]:
        """The DRA manager's cache: ``namespace/name`` -> the claim, its pods, whether it is
        prepared and its devices per driver."""
        return dict(self._dra.claims)

    def allocations(self) -> Mapping[str, PodAllocation]:
        """Admitted pods, in admission order."""
        return dict(self._pods)

    def zone_usage(self) -> dict[int, dict[str, int]]:
        """Per zone id: resource -> amount held exclusively (foreign pods included): CPUs
        out of the shared pool, memory / hugepages bytes reserved by the Memory Manager's
        accounting, allocated devices. Every resource of the zone is listed."""
        out: dict[int, dict[str, int]] = {}
        s = self._s
        for zone in s.profile.zones:
            usage = dict.fromkeys(s.zone_resources[zone.id], 0)
            usage["cpu"] = len(zone.cpus - self._cpu_default)
            for name, table in self._mem[zone.id].tables.items():
                if name in usage:
                    usage[name] = table.reserved
            for name, ids in s.zone_devices[zone.id].items():
                usage[name] = len(self._dev_allocated.get(name, frozenset()) & ids)
            out[zone.id] = usage
        return out

    def zone_free(self) -> dict[int, dict[str, int]]:
        """Per zone id: resource -> amount still available for exclusive allocation (free
        non-reserved CPUs, the Memory Manager's free bytes, free healthy devices)."""
        out: dict[int, dict[str, int]] = {}
        reserved = self.profile.kubelet.reserved_cpus
        for zone in self.profile.zones:
            free: dict[str, int] = {"cpu": len((zone.cpus & self._cpu_default) - reserved)}
            for name, table in self._mem[zone.id].tables.items():
                if name == "memory" or name in zone.hugepages:
                    free[name] = table.free
            for name, dset in zone.devices.items():
                free[name] = len(set(dset.healthy) - self._dev_allocated.get(name, frozenset()))
            out[zone.id] = free
        return out
