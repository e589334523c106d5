"""The CPU topology the CPU manager sees: every CPU's core, socket and NUMA node. Pure.

Mirrors ``CPUTopology`` / ``CPUDetails`` in ``pkg/kubelet/cm/cpumanager/topology``:
``cpus_per_core`` and ``cpus_per_socket`` are whole-machine averages, as upstream
computes them (``NumCPUs / NumCores``, ``NumCPUs / NumSockets``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fakenrt.kubelet.hints import TopologyHint
from fakenrt.profiles.model import CpuInfo, CpuPolicyOptions, NodeProfile


@dataclass(frozen=True)
class CpuTopology:
    cpus: Mapping[int, CpuInfo]
    numa_cpus: Mapping[int, frozenset[int]] = field(init=False)
    socket_cpus: Mapping[int, frozenset[int]] = field(init=False)
    core_cpus: Mapping[int, frozenset[int]] = field(init=False)
    uncore_cpus: Mapping[int, frozenset[int]] = field(init=False)
    #: CPU -> its uncore cache id (the socket when the profile gives none).
    uncore_of: Mapping[int, int] = field(init=False)
    #: CPU -> its NUMA node, socket, core.
    numa_of: Mapping[int, int] = field(init=False)
    socket_of: Mapping[int, int] = field(init=False)
    core_of: Mapping[int, int] = field(init=False)
    #: How the groups overlap: group -> the other kind's groups sharing CPUs with it, and
    #: (group, other) -> the CPUs they share (NUMA node / socket / core).
    sockets_of_numa: Mapping[int, tuple[int, ...]] = field(init=False)
    numas_of_socket: Mapping[int, tuple[int, ...]] = field(init=False)
    cores_of_socket: Mapping[int, tuple[int, ...]] = field(init=False)
    cores_of_numa: Mapping[int, tuple[int, ...]] = field(init=False)
    numa_socket_cpus: Mapping[tuple[int, int], frozenset[int]] = field(init=False)
    socket_numa_cpus: Mapping[tuple[int, int], frozenset[int]] = field(init=False)
    socket_core_cpus: Mapping[tuple[int, int], frozenset[int]] = field(init=False)
    numa_core_cpus: Mapping[tuple[int, int], frozenset[int]] = field(init=False)
    #: The CPU Manager's picks on this topology, by (free CPUs, count, policy options):
    #: :func:`fakenrt.kubelet.cpu_assignment.take_cpus` is a pure function of them, and
    #: nodes of one shape in equal states ask the same question.
    picks: dict[tuple[frozenset[int], int, CpuPolicyOptions], frozenset[int]] = field(
        init=False, default_factory=dict, compare=False, repr=False
    )
    #: The CPU Manager's hints on this topology, by (free CPUs, reusable CPUs, request,
    #: align-by-socket): :func:`fakenrt.kubelet.provider_cpu.generate_hints` is a pure
    #: function of them.
    hinted: dict[tuple[frozenset[int], frozenset[int], int, bool], tuple[TopologyHint, ...]] = (
        field(init=False, default_factory=dict, compare=False, repr=False)
    )

    def __post_init__(self) -> None:
        numa: dict[int, set[int]] = {}
        socket: dict[int, set[int]] = {}
        core: dict[int, set[int]] = {}
        uncore: dict[int, set[int]] = {}
        uncore_of: dict[int, int] = {}
        for cpu, info in self.cpus.items():
            numa.setdefault(info.numa, set()).add(cpu)
            socket.setdefault(info.socket, set()).add(cpu)
            core.setdefault(info.core, set()).add(cpu)
            uncore_of[cpu] = info.socket if info.uncore is None else info.uncore
            uncore.setdefault(uncore_of[cpu], set()).add(cpu)
        object.__setattr__(self, "numa_cpus", {k: frozenset(v) for k, v in numa.items()})
        object.__setattr__(self, "socket_cpus", {k: frozenset(v) for k, v in socket.items()})
        object.__setattr__(self, "core_cpus", {k: frozenset(v) for k, v in core.items()})
        object.__setattr__(self, "uncore_cpus", {k: frozenset(v) for k, v in uncore.items()})
        object.__setattr__(self, "uncore_of", uncore_of)
        object.__setattr__(self, "numa_of", {c: i.numa for c, i in self.cpus.items()})
        object.__setattr__(self, "socket_of", {c: i.socket for c, i in self.cpus.items()})
        object.__setattr__(self, "core_of", {c: i.core for c, i in self.cpus.items()})
        pairs: dict[str, dict[tuple[int, int], set[int]]] = {
            "numa_socket": {},
            "socket_numa": {},
            "socket_core": {},
            "numa_core": {},
        }
        for cpu, info in self.cpus.items():
            pairs["numa_socket"].setdefault((info.numa, info.socket), set()).add(cpu)
            pairs["socket_numa"].setdefault((info.socket, info.numa), set()).add(cpu)
            pairs["socket_core"].setdefault((info.socket, info.core), set()).add(cpu)
            pairs["numa_core"].setdefault((info.numa, info.core), set()).add(cpu)
        for kind, members in (
            ("numa_socket", "sockets_of_numa"),
            ("socket_numa", "numas_of_socket"),
            ("socket_core", "cores_of_socket"),
            ("numa_core", "cores_of_numa"),
        ):
            shared = {key: frozenset(cpus) for key, cpus in pairs[kind].items()}
            object.__setattr__(self, f"{kind}_cpus", shared)
            grouped: dict[int, list[int]] = {}
            for group, other in sorted(shared):
                grouped.setdefault(group, []).append(other)
            object.__setattr__(self, members, {k: tuple(v) for k, v in grouped.items()})

    @classmethod
    def from_profile(cls, profile: NodeProfile) -> CpuTopology:
        """The profile's CPU map; without one, every CPU is its own core and every NUMA
        node its own socket. Nodes with the same map share one topology (it is never
        modified): a fleet of a few shapes holds a few, not one per node (about 120 KB
        each for a 2-socket, 128-CPU node)."""
        if profile.cpu_topology:
            cpus = dict(profile.cpu_topology)
        else:
            cpus = {
                cpu: CpuInfo(cpu=cpu, core=cpu, socket=zone.id, numa=zone.id)
                for zone in profile.zones
                for cpu in zone.cpus
            }
        key = tuple(cpus.items())  # in order: equal keys build equal topologies
        kept = _SHARED.get(key)
        if kept is None:
            if len(_SHARED) >= _SHARED_MAX:
                _SHARED.pop(next(iter(_SHARED)))
            kept = _SHARED[key] = cls(cpus)
        return kept

    @property
    def num_cpus(self) -> int:
        return len(self.cpus)

    @property
    def num_numa_nodes(self) -> int:
        return len(self.numa_cpus)

    @property
    def num_sockets(self) -> int:
        return len(self.socket_cpus)

    @property
    def cpus_per_core(self) -> int:
        return self.num_cpus // max(1, len(self.core_cpus))

    @property
    def cpus_per_socket(self) -> int:
        return self.num_cpus // max(1, self.num_sockets)

    def numa_nodes(self) -> tuple[int, ...]:
        """NUMA nodes that have CPUs, ascending (``CPUDetails.NUMANodes``)."""
        return tuple(sorted(self.numa_cpus))

    def sockets_in_numa_nodes(self, nodes: Iterable[int]) -> frozenset[int]:
        """``CPUDetails.SocketsInNUMANodes``."""
        wanted = set(nodes)
        return frozenset(i.socket for i in self.cpus.values() if i.numa in wanted)

    def cpus_in_sockets(self, sockets: Iterable[int]) -> frozenset[int]:
        out: set[int] = set()
        for s in sockets:
            out |= self.socket_cpus.get(s, frozenset())
        return frozenset(out)

    def physical_cpus_of(self, cpus: Iterable[int]) -> frozenset[int]:
        """Every CPU of the cores ``cpus`` belong to (``reservedPhysicalCPUs``)."""
        out: set[int] = set()
        for cpu in cpus:
            out |= self.core_cpus[self.cpus[cpu].core]
        return frozenset(out)

    def cpus_in_numa_nodes(self, nodes: Iterable[int]) -> frozenset[int]:
        out: set[int] = set()
        for n in nodes:
            out |= self.numa_cpus.get(n, frozenset())
        return frozenset(out)


#: Topologies by CPU map (:meth:`CpuTopology.from_profile`), the oldest dropped past
#: :data:`_SHARED_MAX` (a bound on what hostile or varied profiles can make it hold).
_SHARED: dict[tuple[tuple[int, CpuInfo], ...], CpuTopology] = {}
_SHARED_MAX = 64
